"""The console of a node of two broker processes (num.processes=2): each
process serves its own console on its http port (port + i), lists both
processes, shows the partitions it holds, and answers for a group it does
not coordinate with the process that does."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support import BrokerProcess, free_ports
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.console import HTTP_TIMEOUT_S

PARTITIONS = 4
GROUPS = [f"console-group-{i}" for i in range(8)]


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_each_process_serves_its_own_console(tmp_path):
    http_port = free_ports(2)
    node = BrokerProcess(tmp_path / "node", {"num.processes": "2",
                                            "http.listeners": f"http://127.0.0.1:{http_port}"}).start()
    try:
        admin = admin_client(node.bootstrap)
        admin.create_topics([NewTopic("spread", PARTITIONS, 1)])["spread"].result(ADMIN_TIMEOUT_S)
        for group in GROUPS:
            consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group})
            consumer.commit(offsets=[TopicPartition("spread", 0, 0)], asynchronous=False)
            consumer.close()
        urls = [f"http://127.0.0.1:{http_port + i}" for i in range(2)]
        for url in urls:
            assert len(_get(url + "/api/overview")[1]["brokers"]) == 2
        local = [{p["partition"] for p in _get(url + "/api/topics/spread")[1]["partitions"] if p["local"]}
                 for url in urls]
        assert local[0] | local[1] == set(range(PARTITIONS)) and not local[0] & local[1]
        for group in GROUPS:
            answers = [_get(f"{url}/api/groups/{group}") for url in urls]
            assert sorted(status for status, _ in answers) == [200, 409], answers
            (_, found), (_, refused) = sorted(answers, key=lambda answer: answer[0])
            coordinator = next(i for i, (status, _) in enumerate(answers) if status == 200)
            assert found["offsets"][0]["committed_offset"] == 0
            assert refused["error"] == "NOT_COORDINATOR"
            assert f"its coordinator is broker {coordinator} at 127.0.0.1:{node.port + coordinator}" \
                in refused["message"]
    finally:
        node.kill()

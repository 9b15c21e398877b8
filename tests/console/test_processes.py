"""The console of a node of two broker processes (num.processes=2): each
process serves its own console on its http port (port + i), lists both
processes, shows the partitions it holds, and answers for a group it does
not coordinate with the process that does, with the lag of every
partition, those the other process leads included; and deletes records
of partitions the other process leads by asking it."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support import BrokerProcess, free_ports
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.console import HTTP_TIMEOUT_S, earliest_offsets, filled_topic
from tests.support.metrics import scrape

PARTITIONS = 4
GROUPS = [f"console-group-{i}" for i in range(8)]
PER_PARTITION = 3
# The lag history renews end offsets from other leaders every 5 s.
LAG_WAIT_S = 20.0


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
        producer = Producer({"bootstrap.servers": node.bootstrap})
        for partition in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.produce("spread", b"v%d" % i, partition=partition)
        assert producer.flush(ADMIN_TIMEOUT_S) == 0
        for group in GROUPS:
            consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group})
            consumer.commit(offsets=[TopicPartition("spread", p, 0) for p in range(PARTITIONS)],
                            asynchronous=False)
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
            assert [(o["partition"], o["committed_offset"], o["end_offset"], o["lag"])
                    for o in found["offsets"]] == [(p, 0, PER_PARTITION, PER_PARTITION)
                                                   for p in range(PARTITIONS)]
            assert refused["error"] == "NOT_COORDINATOR"
            assert f"its coordinator is broker {coordinator} at 127.0.0.1:{node.port + coordinator}" \
                in refused["message"]
        coordinators = {group: next(url for url in urls if _get(f"{url}/api/groups/{group}")[0] == 200)
                        for group in GROUPS[:2]}
        deadline = time.monotonic() + LAG_WAIT_S
        while time.monotonic() < deadline and not _lags_known(coordinators):
            time.sleep(0.5)
        assert _lags_known(coordinators)
        for group, url in coordinators.items():
            exported = _exported_lag(url, group)
            assert exported == {p: PER_PARTITION for p in range(PARTITIONS)}, exported
    finally:
        node.kill()


def _lags_known(coordinators: dict[str, str]) -> bool:
    """Each group's total lag in its coordinator's list counts every partition."""
    for group, url in coordinators.items():
        listed = {g["group_id"]: g for g in _get(url + "/api/groups")[1]["groups"]}
        if listed[group]["lag"] != PARTITIONS * PER_PARTITION:
            return False
    return True


def _exported_lag(url: str, group: str) -> dict[int, float]:
    """partition -> kafka_consumergroup_lag of ``group`` on /metrics."""
    return {int(dict(labels)["partition"]): value for (name, labels), value in scrape(url).items()
            if name == "kafka_consumergroup_lag" and dict(labels)["consumergroup"] == group}


def test_delete_records_reaches_the_partitions_the_other_process_leads(tmp_path):
    http_port = free_ports(2)
    node = BrokerProcess(tmp_path / "node", {"num.processes": "2",
                                            "http.listeners": f"http://127.0.0.1:{http_port}"}).start()
    try:
        topic = filled_topic(node.bootstrap, "spread-trim", PARTITIONS, PER_PARTITION)
        url = f"http://127.0.0.1:{http_port}"
        local = {p["partition"] for p in _get(f"{url}/api/topics/{topic}")[1]["partitions"] if p["local"]}
        assert local and local != set(range(PARTITIONS))  # both processes lead some
        request = urllib.request.Request(f"{url}/api/topics/{topic}/delete-records", method="POST",
                                         data=json.dumps({"offset": 2}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            answer = json.loads(response.read())
        assert [(p["partition"], p["low_watermark"], p["error"]) for p in answer["partitions"]] == \
            [(p, 2, None) for p in range(PARTITIONS)]
        assert earliest_offsets(node.bootstrap, topic, PARTITIONS) == [2] * PARTITIONS
    finally:
        node.kill()

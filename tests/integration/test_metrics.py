"""/metrics after a known workload: counts per topic, lag per group, the
exposition parsed by prometheus-client's own parser, and `kcore status`."""
from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support import free_port
from tests.support.cli import kcore_cli
from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client, consume, produce
from tests.support.metrics import scrape

PARTITIONS = 4
COUNT = 4000
COMMITTED = {0: 100, 1: 0, 2: 700, 3: 1000}  # per partition, of 1000 each


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A broker, one topic produced and read once, a group's commits; then
    the scrape's samples {(name, labels): value} and the broker."""
    from tests.support import BrokerProcess
    http_port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("metrics") / "data",
                           {"http.listeners": f"http://127.0.0.1:{http_port}"}).start()
    topic = unique_topic("metrics")
    admin = admin_client(broker.bootstrap)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(ADMIN_TIMEOUT_S)
    produce(broker.bootstrap, topic, make_messages(COUNT, "m", PARTITIONS))
    consume(broker.bootstrap, topic, COUNT, partitions=range(PARTITIONS))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing"})
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    consumer.close()
    url = f"http://127.0.0.1:{http_port}"
    samples = scrape(url)
    yield topic, samples, broker, url
    broker.kill()


def _log_bytes(data_dir: Path, topic: str) -> int:
    return sum(path.stat().st_size for path in data_dir.glob(f"{topic}-*/*.log"))


def test_bytes_and_messages_per_topic_match_the_log(scraped):
    topic, samples, broker, _ = scraped
    on_disk = _log_bytes(broker.data_dir, topic)  # batches are stored as produced
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", topic),))] == COUNT
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", (("topic", topic),))] == on_disk
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", (("topic", topic),))] == on_disk


def test_lag_per_group_and_partition(scraped):
    topic, samples, _, _ = scraped
    for partition, committed in COMMITTED.items():
        labels = (("consumergroup", "billing"), ("partition", str(partition)), ("topic", topic))
        assert samples[("kafka_consumergroup_current_offset", labels)] == committed
        assert samples[("kafka_consumergroup_lag", labels)] == COUNT // PARTITIONS - committed


def test_requests_partitions_and_process_are_there(scraped):
    topic, samples, _, _ = scraped
    produce_requests = sum(value for (name, labels), value in samples.items()
                           if name == "kafka_network_requestmetrics_requests_total"
                           and ("request", "Produce") in labels)
    assert produce_requests >= 1
    assert samples[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] == produce_requests
    assert samples[("kafka_server_replicamanager_partitioncount", ())] >= PARTITIONS
    assert samples[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
    assert samples[("kafka_server_delayedoperationpurgatory_purgatorysize", (("delayedOperation", "Produce"),))] == 0
    assert samples[("process_resident_memory_bytes", ())] > 10 * 2**20
    assert samples[("kafka_log_log_logendoffset", (("partition", "0"), ("topic", topic)))] == COUNT // PARTITIONS


def test_errors_are_counted_per_api_and_error_name(scraped):
    _, samples, _, _ = scraped
    errors = {dict(labels)["error"] for (name, labels), _ in samples.items()
              if name == "kafka_network_requestmetrics_errors_total"}
    assert "NONE" not in errors


def test_kcore_status_prints_health_topics_and_lag(scraped):
    topic, _, _, url = scraped
    done = kcore_cli("status", "--url", url)
    assert done.returncode == 0, done.stderr
    assert "broker 0 (cluster" in done.stdout and "under-replicated 0" in done.stdout
    assert f"{topic}  {PARTITIONS}" in done.stdout
    assert any(line.split() == ["billing", topic, "2", "700", "1000", "300"] for line in done.stdout.splitlines())


def test_kcore_status_says_which_broker_does_not_answer():
    url = f"http://127.0.0.1:{free_port()}"
    done = kcore_cli("status", "--url", url, "--timeout", "2")
    assert done.returncode == 1 and f"{url}: not answering" in done.stderr

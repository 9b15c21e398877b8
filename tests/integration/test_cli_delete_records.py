"""`kcore delete-records --offset-json-file F` against a real broker, with
kafka-delete-records.sh's file and output; the result cross-checked with
kafka-python."""
from __future__ import annotations

import json

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.support.cli import kcore_cli


def offsets_file(tmp_path, entries, **extra) -> str:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": entries, **extra}))
    return str(path)


def fill(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for index in range(count):
        for partition in range(partitions):
            producer.send(topic, f"{index}".encode(), partition=partition).get(timeout=20)
    producer.close()


def beginning(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        keys = [TopicPartition(topic, p) for p in range(partitions)]
        found = consumer.beginning_offsets(keys)
        return [found[key] for key in keys]
    finally:
        consumer.close()


def test_delete_records_prints_each_low_watermark_as_kafkas_tool(broker, tmp_path):
    fill(broker.bootstrap, "trim", 3, 6)
    path = offsets_file(tmp_path, [{"topic": "trim", "partition": 0, "offset": 4},
                                   {"topic": "trim", "partition": 1, "offset": -1}], version=1)
    result = kcore_cli("delete-records", "--offset-json-file", path, "--bootstrap-server", broker.bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Executing records delete operation", "Records delete operation completed:",
        "partition: trim-0\tlow_watermark: 4", "partition: trim-1\tlow_watermark: 6"]
    assert beginning(broker.bootstrap, "trim", 3) == [4, 6, 0]


def test_partition_errors_are_printed_per_partition_and_exit_1(broker, tmp_path):
    fill(broker.bootstrap, "some", 1, 3)
    path = offsets_file(tmp_path, [{"topic": "some", "partition": 0, "offset": 9},
                                   {"topic": "none-such", "partition": 0, "offset": 1},
                                   {"topic": "some", "partition": 5, "offset": 1}])
    result = kcore_cli("delete-records", "--offset-json-file", path, "--bootstrap-server", broker.bootstrap)
    assert result.returncode == 1
    assert result.stdout.splitlines()[2:] == [
        "partition: some-0\terror: OFFSET_OUT_OF_RANGE",
        "partition: none-such-0\terror: UNKNOWN_TOPIC_OR_PARTITION",
        "partition: some-5\terror: UNKNOWN_TOPIC_OR_PARTITION"]
    assert beginning(broker.bootstrap, "some", 1) == [0]


def test_a_bad_file_is_refused_before_anything_is_sent(tmp_path):
    bad = {
        "not-json": "{",
        "no-partitions": json.dumps({"version": 1}),
        "version-2": json.dumps({"partitions": [], "version": 2}),
        "missing-offset": json.dumps({"partitions": [{"topic": "t", "partition": 0}]}),
        "string-offset": json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": "3"}]}),
        "duplicate": json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": 1},
                                                {"topic": "t", "partition": 0, "offset": 2}]}),
    }
    for name, text in bad.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        # No broker listens on port 1: a file that parsed would fail to connect with 1, not 2.
        result = kcore_cli("delete-records", "--offset-json-file", str(path), "--bootstrap-server", "127.0.0.1:1")
        assert (result.returncode, result.stdout) == (2, ""), name
        assert result.stderr.startswith("Error: "), name
    assert "duplicate topic partitions: t-0" in result.stderr
    missing = kcore_cli("delete-records", "--offset-json-file", str(tmp_path / "absent.json"))
    assert missing.returncode == 2

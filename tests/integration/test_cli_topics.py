"""`kcore topics ...` against a real broker subprocess, cross-checked with kafka-python."""

import re

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.support.cli import kcore_cli


def kcore(*args, bootstrap=None, stdin=None):
    if bootstrap is not None:
        args += ("--bootstrap-server", bootstrap)
    return kcore_cli(*args, stdin=stdin, text=False)


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def describe_lines(broker, name):
    return ok(kcore("topics", "describe", name, bootstrap=broker.bootstrap)).splitlines()


def test_topics_create_list_describe_alter_delete_round_trip(broker):
    b = broker.bootstrap
    assert "Created topic orders." in ok(kcore(
        "topics", "create", "orders", "--partitions", "3", "--replication-factor", "1",
        "--config", "retention.ms=123456", "--config", "cleanup.policy=delete", bootstrap=b))
    assert "orders" in ok(kcore("topics", "list", bootstrap=b)).split()

    header, *partitions = describe_lines(broker, "orders")
    # kafka-topics' layout, the topic id (Metadata v10+) in Kafka's base64 included.
    assert re.match(r"Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\t", header)
    assert "retention.ms=123456" in header
    assert "segment.bytes" not in header  # left at its default
    assert [line.split("\t")[2] for line in partitions] == [
        "Partition: 0", "Partition: 1", "Partition: 2"]
    for line in partitions:
        leader = line.split("Leader: ")[1].split("\t")[0]
        assert f"Replicas: {leader}" in line and f"Isr: {leader}" in line

    assert "Updated config" in ok(kcore(
        "topics", "alter", "orders", "--config", "cleanup.policy=compact",
        "--delete-config", "retention.ms", bootstrap=b))
    header = describe_lines(broker, "orders")[0]
    assert "cleanup.policy=compact" in header
    assert "retention.ms" not in header

    assert "Deleted topic orders." in ok(kcore("topics", "delete", "orders", bootstrap=b))
    assert "orders" not in ok(kcore("topics", "list", bootstrap=b)).split()


def test_configs_set_by_the_cli_are_what_kafka_python_admin_reads(broker):
    ok(kcore("topics", "create", "audited", "--partitions", "2",
             "--config", "max.message.bytes=200000", bootstrap=broker.bootstrap))
    ok(kcore("topics", "alter", "audited", "--config", "retention.ms=999000",
             bootstrap=broker.bootstrap))
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        described = admin.describe_topics(["audited"])
        resources = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "audited")])
    finally:
        admin.close()
    assert len(described[0]["partitions"]) == 2
    configs = resources["topic"]["audited"]
    assert configs["max.message.bytes"]["value"] == "200000"
    assert configs["retention.ms"]["value"] == "999000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"


def test_describe_without_a_name_lists_every_topic(broker):
    for name in ("alpha", "beta"):
        ok(kcore("topics", "create", name, "--partitions", "1", bootstrap=broker.bootstrap))
    out = ok(kcore("topics", "describe", bootstrap=broker.bootstrap))
    assert re.search(r"Topic: alpha\tTopicId: \S+\tPartitionCount: 1", out)
    assert re.search(r"Topic: beta\tTopicId: \S+\tPartitionCount: 1", out)


def test_creating_an_existing_topic_prints_topic_already_exists(broker):
    ok(kcore("topics", "create", "dup", bootstrap=broker.bootstrap))
    result = kcore("topics", "create", "dup", bootstrap=broker.bootstrap)
    assert result.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in result.stderr.decode()


def test_describing_an_unknown_topic_prints_unknown_topic_or_partition(broker):
    result = kcore("topics", "describe", "missing", bootstrap=broker.bootstrap)
    assert result.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in result.stderr.decode()


def test_deleting_an_unknown_topic_fails(broker):
    result = kcore("topics", "delete", "missing", bootstrap=broker.bootstrap)
    assert result.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in result.stderr.decode()


def test_an_invalid_config_value_prints_invalid_config(broker):
    ok(kcore("topics", "create", "strict", bootstrap=broker.bootstrap))
    result = kcore("topics", "alter", "strict", "--config", "retention.ms=soon",
                   bootstrap=broker.bootstrap)
    assert result.returncode == 1
    assert "INVALID_CONFIG" in result.stderr.decode()


def test_an_unreachable_broker_is_reported_not_a_traceback(tmp_path):
    from tests.support import free_port
    result = kcore("topics", "list", bootstrap=f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "cannot connect" in stderr and "Traceback" not in stderr


def test_alter_without_changes_is_a_usage_error(broker):
    result = kcore("topics", "alter", "anything", bootstrap=broker.bootstrap)
    assert result.returncode == 2

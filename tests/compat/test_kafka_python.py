"""kafka-python 3.x against a real broker process.

Consumers are KafkaConsumer(group_id=None) with assign() and seek, so each
check reads exact offsets (consumer groups have their own suite in
tests/integration/test_groups_*.py).
"""
from __future__ import annotations

import logging

import pytest
from kafka import TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
from kafka.errors import InvalidConfigurationError, TopicAlreadyExistsError

from tests.support.compat import (
    BROKER_ID,
    CODEC_ACKS,
    CODEC_COUNT,
    DEFAULT_RETENTION_MS,
    DEFAULT_SEGMENT_BYTES,
    FULL_COUNT,
    assert_exactly_once,
    assert_same_partitions,
    broker_behind_proxy,
    expected_leader,
    first_offset_at_or_after,
    idempotence_messages,
    make_messages,
    now_ms,
    offsets_for_times_messages,
    start_broker,
    timestamp_probes,
    unique_topic,
    wait_until,
)
from tests.support.kafka_python import consume, create_topic, new_consumer, produce, topic_configs


@pytest.mark.processes
def test_admin_creates_topic_with_configs_and_describe_topics_shows_its_partitions(admin, shared_broker):
    topic = unique_topic("kp-admin-create")
    result = create_topic(admin, topic, 3, {"retention.ms": "3600000", "max.message.bytes": "200000"})
    assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(topic, 0)]

    [described] = admin.describe_topics([topic])
    assert described["error_code"] == 0
    partitions = sorted(described["partitions"], key=lambda p: p["partition_index"])
    assert [p["partition_index"] for p in partitions] == [0, 1, 2]
    for partition in partitions:
        leader = expected_leader(shared_broker, partition["partition_index"])
        assert partition["leader_id"] == leader
        assert partition["replica_nodes"] == [leader] and partition["isr_nodes"] == [leader]


def test_admin_create_existing_topic_raises_topic_already_exists(admin):
    topic = unique_topic("kp-admin-exists")
    create_topic(admin, topic, 2)
    with pytest.raises(TopicAlreadyExistsError):
        create_topic(admin, topic, 2)


def test_admin_create_topic_with_invalid_config_raises_invalid_config(admin):
    topic = unique_topic("kp-admin-invalid")
    with pytest.raises(InvalidConfigurationError):
        create_topic(admin, topic, 1, {"cleanup.policy": "shred"})
    assert topic not in admin.list_topics()


def test_admin_describe_configs_lists_set_values_and_defaults_with_their_sources(admin):
    topic = unique_topic("kp-admin-describe")
    create_topic(admin, topic, 1, {"retention.ms": "3600000"})

    configs = topic_configs(admin, topic)
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["segment.bytes"]["value"] == DEFAULT_SEGMENT_BYTES
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["compression.type"]["value"] == "producer"
    assert configs["cleanup.policy"]["value"] == "delete"
    modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])["topic"][topic]
    assert set(modified) == {"retention.ms"}


def test_admin_describe_configs_with_synonyms_names_the_broker_default_behind_a_topic_config(admin):
    topic = unique_topic("kp-admin-synonyms")
    create_topic(admin, topic, 1, {"max.message.bytes": "200000"})
    found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], include_synonyms=True,
                                   config_filter="all")["topic"][topic]
    synonyms = [(s["name"], s["value"], s["source"]) for s in found["max.message.bytes"]["synonyms"]]
    assert synonyms[0] == ("max.message.bytes", "200000", "DYNAMIC_TOPIC_CONFIG")
    assert ("message.max.bytes", "1048588", "DEFAULT_CONFIG") in synonyms[1:]


def test_admin_alter_configs_keeps_other_modified_configs(admin):
    topic = unique_topic("kp-admin-alter")
    create_topic(admin, topic, 1, {"retention.ms": "3600000", "max.message.bytes": "200000"})

    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "7200000"})],
                                 incremental=False)
    assert result == {"topic": {topic: "OK"}}

    configs = topic_configs(admin, topic)
    assert configs["retention.ms"]["value"] == "7200000"
    assert configs["max.message.bytes"]["value"] == "200000"


def test_admin_incremental_alter_configs_sets_and_deletes_single_keys(admin):
    topic = unique_topic("kp-admin-incremental")
    create_topic(admin, topic, 1, {"retention.ms": "3600000"})

    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={
        "segment.bytes": (AlterConfigOp.SET, "1048576"), "retention.ms": (AlterConfigOp.DELETE, None)})],
        incremental=True)
    assert result == {"topic": {topic: "OK"}}

    configs = topic_configs(admin, topic)
    assert configs["segment.bytes"]["value"] == "1048576"
    assert configs["segment.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.ms"]["value"] == DEFAULT_RETENTION_MS
    assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"


def test_admin_create_partitions_grows_the_topic(admin, shared_broker):
    topic = unique_topic("kp-admin-grow")
    create_topic(admin, topic, 2)
    admin.create_partitions({topic: 5})
    [described] = admin.describe_topics([topic])
    assert len(described["partitions"]) == 5
    produce(shared_broker.bootstrap, topic, make_messages(50, "grown", partitions=5))
    assert len(consume(shared_broker.bootstrap, topic, partitions=range(5))) == 50


def test_admin_deletes_topic_and_list_topics_no_longer_has_it(admin):
    topic = unique_topic("kp-admin-delete")
    create_topic(admin, topic, 2)
    assert topic in admin.list_topics()
    admin.delete_topics([topic])
    wait_until(lambda: topic not in admin.list_topics(), 10, f"{topic} gone")


def test_admin_describe_cluster_names_the_single_broker(admin, shared_broker):
    cluster = admin.describe_cluster()
    assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == [(BROKER_ID, shared_broker.port)]
    assert cluster["controller_id"] == BROKER_ID
    assert cluster["cluster_id"]


@pytest.mark.processes
@pytest.mark.timeout(150)
def test_100k_messages_with_keys_headers_and_timestamps_round_trip_in_partition_order(shared_broker):
    topic, messages = unique_topic("kp-100k"), make_messages(FULL_COUNT, "kp")
    produce(shared_broker.bootstrap, topic, messages, batch_size=1_000_000)
    assert_same_partitions(messages, consume(shared_broker.bootstrap, topic))


@pytest.mark.processes
@pytest.mark.parametrize("codec, acks", CODEC_ACKS)
def test_codec_and_acks_round_trip(shared_broker, codec, acks):
    topic, messages = unique_topic(f"kp-{codec}-{acks}"), make_messages(CODEC_COUNT, f"kp-{codec}")
    produce(shared_broker.bootstrap, topic, messages, acks=acks if acks == "all" else int(acks),
            compression_type=None if codec == "none" else codec)
    assert_same_partitions(messages, consume(shared_broker.bootstrap, topic, expected_total=len(messages)))


@pytest.mark.processes
def test_offsets_for_times_returns_first_offset_at_or_after_timestamp(shared_broker):
    topic, messages = unique_topic("kp-times"), offsets_for_times_messages("kp")
    third = len(messages) // 3
    for chunk in (messages[:third], messages[third:2 * third], messages[2 * third:]):
        produce(shared_broker.bootstrap, topic, chunk)  # several batches per partition
    partitions = [TopicPartition(topic, p) for p in sorted({m.partition for m in messages})]
    consumer = new_consumer(shared_broker.bootstrap)
    try:
        for timestamp in timestamp_probes(messages, 0):
            found = consumer.offsets_for_times({tp: timestamp for tp in partitions})
            for tp in partitions:
                expected = first_offset_at_or_after(messages, tp.partition, timestamp)
                got = found[tp]
                assert (None if got is None else got.offset) == expected, f"{tp} timestamp {timestamp}"
                if got is not None:
                    assert got.timestamp == messages[0].timestamp + 10 * (expected // 2)
    finally:
        consumer.close()


@pytest.mark.timeout(150)
def test_idempotent_producer_through_cutting_proxy_writes_each_message_once_in_order(tmp_path, caplog):
    caplog.set_level(logging.CRITICAL, logger="kafka")  # every cut logs a connection error
    topic, messages = unique_topic("kp-idempotent"), idempotence_messages(10_000, "kp")
    with broker_behind_proxy(tmp_path / "data", cut_every_bytes=64 * 1024, max_cuts=12) as (broker, proxy):
        produce(proxy.bootstrap, topic, messages, enable_idempotence=True, acks="all", linger_ms=2,
                batch_size=64 * 1024, retry_backoff_ms=20, reconnect_backoff_ms=20)
        proxy.stop_cutting()
        consumed = consume(proxy.bootstrap, topic)
        assert proxy.torn_requests > 0 and proxy.lost_responses > 0, (
            f"the proxy cut {proxy.cuts} times: {proxy.torn_requests} torn, {proxy.lost_responses} lost")
    assert_exactly_once(messages, consumed)


@pytest.mark.timeout(150)
def test_data_readable_after_clean_stop_and_after_sigkill_restart(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("kp-restart")
    try:
        before_stop = make_messages(4000, "before-stop")
        produce(broker.bootstrap, topic, before_stop)
        assert broker.stop() == 0, broker.log()
        broker.start()
        assert_same_partitions(before_stop, consume(broker.bootstrap, topic))

        before_kill = make_messages(4000, "before-kill", base_timestamp=now_ms())
        produce(broker.bootstrap, topic, before_kill)
        broker.restart(clean=False)
        assert_same_partitions(before_stop + before_kill, consume(broker.bootstrap, topic))

        after_recovery = make_messages(800, "after-recovery", base_timestamp=now_ms())
        produce(broker.bootstrap, topic, after_recovery)
        assert_same_partitions(before_stop + before_kill + after_recovery, consume(broker.bootstrap, topic))
    finally:
        broker.kill()

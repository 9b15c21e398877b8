"""confluent-kafka (librdkafka 2.x) against a real broker process.

Consumers use assign() with explicit offsets and never commit, so each check
reads exact offsets (consumer groups have their own suite in
tests/integration/test_groups_*.py); librdkafka needs a group.id only to
build the consumer object.
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from confluent_kafka.error import KafkaError

from tests.support.compat import (
    BROKER_ID,
    CODEC_ACKS,
    CODEC_COUNT,
    DEFAULT_RETENTION_MS,
    DEFAULT_SEGMENT_BYTES,
    FULL_COUNT,
    Message,
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
from tests.support.confluent import (
    ADMIN_TIMEOUT_S,
    admin_client,
    admin_error_code,
    consume,
    list_offsets,
    new_consumer,
    partition_count,
    produce,
    topic_configs,
)


@pytest.mark.processes
def test_admin_creates_topic_with_configs_and_metadata_shows_its_partitions(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-create")
    futures = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                            config={"retention.ms": "3600000", "max.message.bytes": "200000"})],
                                  request_timeout=ADMIN_TIMEOUT_S)
    futures[topic].result(ADMIN_TIMEOUT_S)

    metadata = admin.list_topics(topic=topic, timeout=ADMIN_TIMEOUT_S).topics[topic]
    assert sorted(metadata.partitions) == [0, 1, 2]
    for partition in metadata.partitions.values():
        leader = expected_leader(shared_broker, partition.id)
        assert partition.leader == leader
        assert partition.replicas == [leader] and partition.isrs == [leader]


def test_admin_create_existing_topic_fails_with_topic_already_exists(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-exists")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    with pytest.raises(KafkaException) as error:
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    assert error.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_admin_create_topic_with_invalid_config_fails_with_invalid_config(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-invalid")
    with pytest.raises(KafkaException) as error:
        admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "shred"})])[topic].result(ADMIN_TIMEOUT_S)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert topic not in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics




def test_admin_requests_that_break_kafka_rules_get_kafka_error_codes(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-rules")
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(ADMIN_TIMEOUT_S)
    missing = unique_topic("cf-admin-missing")

    assert admin_error_code(admin.create_topics([NewTopic(missing, 1, 2)])[missing]) == \
        KafkaError.INVALID_REPLICATION_FACTOR
    assert admin_error_code(admin.create_topics([NewTopic("bad name!", 1, 1)])["bad name!"]) == \
        KafkaError.TOPIC_EXCEPTION
    assert admin_error_code(admin.create_partitions([NewPartitions(topic, 2)])[topic]) == \
        KafkaError.INVALID_PARTITIONS
    assert admin_error_code(admin.delete_topics([missing])[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    unknown_key = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    assert admin_error_code(admin.incremental_alter_configs([unknown_key])[unknown_key]) == KafkaError.INVALID_CONFIG
    bad_value = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    assert admin_error_code(admin.incremental_alter_configs([bad_value])[bad_value]) == KafkaError.INVALID_CONFIG
    unknown_topic = ConfigResource("topic", missing)
    assert admin_error_code(admin.describe_configs([unknown_topic])[unknown_topic]) == \
        KafkaError.UNKNOWN_TOPIC_OR_PART
    assert partition_count(admin, topic) == 3
    assert missing not in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics


def test_admin_describe_configs_lists_set_values_and_defaults_with_their_sources(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-describe")
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(ADMIN_TIMEOUT_S)

    configs = topic_configs(admin, topic)
    assert configs["retention.ms"].value == "3600000"
    assert ConfigSource(configs["retention.ms"].source) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert not configs["retention.ms"].is_default
    assert configs["segment.bytes"].value == DEFAULT_SEGMENT_BYTES
    assert configs["segment.bytes"].is_default
    assert ConfigSource(configs["segment.bytes"].source) == ConfigSource.DEFAULT_CONFIG
    assert configs["compression.type"].value == "producer"
    assert configs["cleanup.policy"].value == "delete"
    for name in ("retention.bytes", "max.message.bytes", "min.insync.replicas", "message.timestamp.type",
                 "segment.ms", "flush.messages", "index.interval.bytes"):
        assert name in configs, f"{name} missing from DescribeConfigs"


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_admin_alter_configs_replaces_the_whole_topic_config(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-alter")
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000", "max.message.bytes": "200000"})]
                        )[topic].result(ADMIN_TIMEOUT_S)

    resource = ConfigResource("topic", topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)

    configs = topic_configs(admin, topic)
    assert configs["retention.ms"].value == "7200000"
    assert configs["max.message.bytes"].is_default, "AlterConfigs resets configs it does not name"


def test_admin_incremental_alter_configs_sets_and_deletes_single_keys(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-incremental")
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(ADMIN_TIMEOUT_S)

    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)

    configs = topic_configs(admin, topic)
    assert configs["segment.bytes"].value == "1048576"
    assert not configs["segment.bytes"].is_default
    assert configs["retention.ms"].value == DEFAULT_RETENTION_MS
    assert configs["retention.ms"].is_default


def test_admin_create_partitions_grows_the_topic(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-grow")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(ADMIN_TIMEOUT_S)
    assert partition_count(admin, topic) == 5
    produce(shared_broker.bootstrap, topic, make_messages(50, "grown", partitions=5))
    assert len(consume(shared_broker.bootstrap, topic, partitions=range(5))) == 50


def test_admin_deletes_topic_and_metadata_no_longer_lists_it(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-admin-delete")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(ADMIN_TIMEOUT_S)
    admin.delete_topics([topic], request_timeout=ADMIN_TIMEOUT_S)[topic].result(ADMIN_TIMEOUT_S)
    wait_until(lambda: topic not in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics, 10, f"{topic} gone")


def test_admin_describe_cluster_names_the_single_broker(shared_broker):
    admin = admin_client(shared_broker.bootstrap)  # must outlive the future
    cluster = admin.describe_cluster(request_timeout=ADMIN_TIMEOUT_S).result(ADMIN_TIMEOUT_S)
    assert [node.id for node in cluster.nodes] == [BROKER_ID]
    assert cluster.nodes[0].port == shared_broker.port
    assert cluster.controller.id == BROKER_ID
    assert cluster.cluster_id


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_100k_messages_with_keys_headers_and_timestamps_round_trip_in_partition_order(shared_broker):
    topic, messages = unique_topic("cf-100k"), make_messages(FULL_COUNT, "cf")
    produce(shared_broker.bootstrap, topic, messages, **{"batch.size": 1_000_000})
    assert_same_partitions(messages, consume(shared_broker.bootstrap, topic))


@pytest.mark.processes
@pytest.mark.parametrize("codec, acks", CODEC_ACKS)
def test_codec_and_acks_round_trip(shared_broker, codec, acks):
    topic, messages = unique_topic(f"cf-{codec}-{acks}"), make_messages(CODEC_COUNT, f"cf-{codec}")
    produce(shared_broker.bootstrap, topic, messages, **{"compression.type": codec, "acks": acks})
    assert_same_partitions(messages, consume(shared_broker.bootstrap, topic, expected_total=len(messages)))


@pytest.mark.processes
def test_offsets_for_times_returns_first_offset_at_or_after_timestamp(shared_broker):
    topic, messages = unique_topic("cf-times"), offsets_for_times_messages("cf")
    third = len(messages) // 3
    for chunk in (messages[:third], messages[third:2 * third], messages[2 * third:]):
        produce(shared_broker.bootstrap, topic, chunk)  # several batches per partition
    partitions = sorted({m.partition for m in messages})
    consumer = new_consumer(shared_broker.bootstrap)
    try:
        for timestamp in timestamp_probes(messages, 0):
            found = consumer.offsets_for_times([TopicPartition(topic, p, timestamp) for p in partitions], timeout=10)
            for result in found:
                assert result.error is None, result.error
                expected = first_offset_at_or_after(messages, result.partition, timestamp)
                assert result.offset == (-1 if expected is None else expected), (
                    f"partition {result.partition} timestamp {timestamp}")
    finally:
        consumer.close()




def test_admin_list_offsets_answers_earliest_latest_and_by_timestamp(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-list-offsets")
    messages = offsets_for_times_messages("cf-list", partitions=1)
    produce(shared_broker.bootstrap, topic, messages)
    assert list_offsets(admin, topic, OffsetSpec.earliest()).offset == 0
    assert list_offsets(admin, topic, OffsetSpec.latest()).offset == len(messages)
    probe = messages[51].timestamp
    found = list_offsets(admin, topic, OffsetSpec.for_timestamp(probe))
    assert (found.offset, found.timestamp) == (50, probe)


def test_admin_list_offsets_max_timestamp_finds_the_record_with_the_largest_timestamp(shared_broker):
    admin, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-max-timestamp")
    base = now_ms() - 60_000
    messages = [Message(0, None, f"m{i}".encode(), (), base + (100_000 if i == 20 else i)) for i in range(50)]
    produce(shared_broker.bootstrap, topic, messages)
    found = list_offsets(admin, topic, OffsetSpec.max_timestamp())
    assert (found.offset, found.timestamp) == (20, base + 100_000)


@pytest.mark.timeout(150)
def test_idempotent_producer_through_cutting_proxy_writes_each_message_once_in_order(tmp_path):
    topic, messages = unique_topic("cf-idempotent"), idempotence_messages(20_000, "cf")
    with broker_behind_proxy(tmp_path / "data", cut_every_bytes=128 * 1024, max_cuts=12) as (broker, proxy):
        produce(proxy.bootstrap, topic, messages, **{"enable.idempotence": True, "linger.ms": 2,
                                                     "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                                                     "reconnect.backoff.max.ms": 100})
        proxy.stop_cutting()
        consumed = consume(proxy.bootstrap, topic)
        assert proxy.torn_requests > 0 and proxy.lost_responses > 0, (
            f"the proxy cut {proxy.cuts} times: {proxy.torn_requests} torn, {proxy.lost_responses} lost")
    assert_exactly_once(messages, consumed)


@pytest.mark.timeout(150)
def test_data_readable_after_clean_stop_and_after_sigkill_restart(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("cf-restart")
    try:
        before_stop = make_messages(4000, "before-stop")
        produce(broker.bootstrap, topic, before_stop, acks="all")
        assert broker.stop() == 0, broker.log()
        broker.start()
        assert_same_partitions(before_stop, consume(broker.bootstrap, topic))

        before_kill = make_messages(4000, "before-kill", base_timestamp=now_ms())
        produce(broker.bootstrap, topic, before_kill, acks="all")
        broker.restart(clean=False)
        assert_same_partitions(before_stop + before_kill, consume(broker.bootstrap, topic))

        after_recovery = make_messages(800, "after-recovery", base_timestamp=now_ms())
        produce(broker.bootstrap, topic, after_recovery, acks="all")
        assert_same_partitions(before_stop + before_kill + after_recovery, consume(broker.bootstrap, topic))
    finally:
        broker.kill()

"""aiokafka 0.14 against a real broker process.

Consumers are AIOKafkaConsumer(group_id=None) with assign() and seek, so
each check reads exact offsets (consumer groups have their own suite in
tests/integration/test_groups_*.py). Each test runs its own event loop.
"""
from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.support.compat import (
    BROKER_ID,
    CODEC_ACKS,
    CODEC_COUNT,
    DEFAULT_SEGMENT_BYTES,
    FULL_COUNT,
    PARTITIONS,
    READ_TIMEOUT_S,
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
    received,
    start_broker,
    timestamp_probes,
    unique_topic,
)

CREATE_TIME = 0
TOPIC_ALREADY_EXISTS = 36
INVALID_CONFIG = 40
# DescribeConfigs v1+ config_source values (Kafka's ConfigSource).
DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, READ_TIMEOUT_S * 2))


async def produce(bootstrap: str, topic: str, messages: list[Message], **config) -> None:
    """Send every message to its partition, flush, and await every delivery."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **{"linger_ms": 5, "max_batch_size": 256 * 1024, **config})
    await producer.start()
    try:
        deliveries = [await producer.send(topic, value=m.value, key=m.key, partition=m.partition,
                                          timestamp_ms=m.timestamp, headers=list(m.headers))
                      for m in messages]
        await producer.flush()
        results = await asyncio.gather(*deliveries, return_exceptions=True)
    finally:
        await producer.stop()
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, f"{len(failures)} sends failed, first: {failures[:3]}"


async def wait_for_total(consumer: AIOKafkaConsumer, assigned: list[TopicPartition], total: int) -> None:
    deadline = time.monotonic() + READ_TIMEOUT_S
    while sum((await consumer.end_offsets(assigned)).values()) < total:
        assert time.monotonic() < deadline, f"fewer than {total} messages after {READ_TIMEOUT_S}s"
        await asyncio.sleep(0.1)


async def consume(bootstrap: str, topic: str, expected_total: int | None = None,
                  partitions=range(PARTITIONS)) -> list[Message]:
    """Everything below each partition's high watermark, from offset 0, with
    contiguous offsets; with expected_total, first wait (bounded) until the
    high watermarks add up to it."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                fetch_max_wait_ms=100)
    await consumer.start()
    try:
        assigned = [TopicPartition(topic, p) for p in partitions]
        if expected_total is not None:
            await wait_for_total(consumer, assigned, expected_total)
        ends = {tp.partition: offset for tp, offset in (await consumer.end_offsets(assigned)).items()}
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        next_offset = {p: 0 for p in partitions}
        messages = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(next_offset[p] < ends[p] for p in partitions):
            assert time.monotonic() < deadline, f"read stalled at {next_offset}, high watermarks {ends}"
            for tp, records in (await consumer.getmany(timeout_ms=500, max_records=20_000)).items():
                for record in records:
                    assert record.offset == next_offset[tp.partition], (
                        f"partition {tp.partition}: offset {record.offset} after {next_offset[tp.partition] - 1}")
                    next_offset[tp.partition] += 1
                    assert record.timestamp_type == CREATE_TIME
                    messages.append(received(tp.partition, record.key, record.value, record.headers,
                                             record.timestamp))
        return messages
    finally:
        await consumer.stop()


async def with_admin(bootstrap: str, body):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await body(admin)
    finally:
        await admin.close()


async def create_topic(admin: AIOKafkaAdminClient, topic: str, partitions: int, configs: dict | None = None):
    response = await admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    return [(name, code) for name, code, *_ in response.topic_errors]


async def topic_configs(admin: AIOKafkaAdminClient, topic: str) -> dict[str, tuple]:
    """name -> (value, read_only, config_source, is_sensitive) from DescribeConfigs."""
    [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    [(error_code, _message, _type, name, entries)] = response.resources
    assert (error_code, name) == (0, topic)
    return {entry[0]: tuple(entry[1:5]) for entry in entries}


@pytest.mark.processes
def test_admin_creates_topic_with_configs_and_metadata_shows_its_partitions(shared_broker):
    topic = unique_topic("aio-admin-create")

    async def body(admin):
        assert await create_topic(admin, topic, 3, {"retention.ms": "3600000"}) == [(topic, 0)]
        assert topic in await admin.list_topics()
        [described] = await admin.describe_topics([topic])
        return described

    described = run(with_admin(shared_broker.bootstrap, body))
    assert described["error_code"] == 0
    partitions = sorted(described["partitions"], key=lambda p: p["partition"])
    assert [p["partition"] for p in partitions] == [0, 1, 2]
    for p in partitions:
        leader = expected_leader(shared_broker, p["partition"])
        assert p["leader"] == leader and p["replicas"] == [leader] and p["isr"] == [leader]


def test_admin_create_existing_or_invalid_topic_reports_the_kafka_error_codes(shared_broker):
    exists, invalid = unique_topic("aio-admin-exists"), unique_topic("aio-admin-invalid")

    async def body(admin):
        await create_topic(admin, exists, 2)
        again = await create_topic(admin, exists, 2)
        bad = await create_topic(admin, invalid, 1, {"cleanup.policy": "shred"})
        return again, bad, await admin.list_topics()

    again, bad, listed = run(with_admin(shared_broker.bootstrap, body))
    assert again == [(exists, TOPIC_ALREADY_EXISTS)]
    assert bad == [(invalid, INVALID_CONFIG)]
    assert invalid not in listed


def test_admin_describe_configs_lists_set_values_and_defaults_with_their_sources(shared_broker):
    topic = unique_topic("aio-admin-describe")

    async def body(admin):
        await create_topic(admin, topic, 1, {"retention.ms": "3600000"})
        return await topic_configs(admin, topic)

    configs = run(with_admin(shared_broker.bootstrap, body))
    assert configs["retention.ms"][0] == "3600000"
    assert configs["retention.ms"][2] == DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"][0] == DEFAULT_SEGMENT_BYTES
    assert configs["segment.bytes"][2] == DEFAULT_CONFIG
    assert configs["compression.type"][0] == "producer"
    assert not any(read_only for _value, read_only, _source, _sensitive in configs.values())


def test_admin_alter_configs_sets_the_named_config_and_resets_the_rest(shared_broker):
    topic = unique_topic("aio-admin-alter")

    async def body(admin):
        await create_topic(admin, topic, 1, {"retention.ms": "3600000", "max.message.bytes": "200000"})
        responses = await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                              configs={"retention.ms": "7200000"})])
        return responses, await topic_configs(admin, topic)

    responses, configs = run(with_admin(shared_broker.bootstrap, body))
    assert [(code, name) for r in responses for code, _msg, _type, name in r.resources] == [(0, topic)]
    assert configs["retention.ms"][0] == "7200000"
    assert configs["max.message.bytes"][2] == DEFAULT_CONFIG, "AlterConfigs resets configs it does not name"


def test_admin_create_partitions_then_delete_topic(shared_broker):
    topic = unique_topic("aio-admin-grow")

    async def body(admin):
        await create_topic(admin, topic, 2)
        await admin.create_partitions({topic: NewPartitions(5)})
        [described] = await admin.describe_topics([topic])
        response = await admin.delete_topics([topic])
        return len(described["partitions"]), response.topic_error_codes, await admin.list_topics()

    partitions, deleted, listed = run(with_admin(shared_broker.bootstrap, body))
    assert partitions == 5
    assert [(name, code) for name, code in deleted] == [(topic, 0)]
    assert topic not in listed


def test_admin_describe_cluster_names_the_single_broker(shared_broker):
    cluster = run(with_admin(shared_broker.bootstrap, lambda admin: admin.describe_cluster()))
    assert [(b["node_id"], b["port"]) for b in cluster["brokers"]] == [(BROKER_ID, shared_broker.port)]
    assert cluster["controller_id"] == BROKER_ID


@pytest.mark.processes
@pytest.mark.timeout(150)
def test_100k_messages_with_keys_headers_and_timestamps_round_trip_in_partition_order(shared_broker):
    topic, messages = unique_topic("aio-100k"), make_messages(FULL_COUNT, "aio")

    async def body():
        await produce(shared_broker.bootstrap, topic, messages, max_request_size=2_000_000)
        return await consume(shared_broker.bootstrap, topic)

    assert_same_partitions(messages, run(body()))


@pytest.mark.processes
@pytest.mark.parametrize("codec, acks", CODEC_ACKS)
def test_codec_and_acks_round_trip(shared_broker, codec, acks):
    topic, messages = unique_topic(f"aio-{codec}-{acks}"), make_messages(CODEC_COUNT, f"aio-{codec}")

    async def body():
        await produce(shared_broker.bootstrap, topic, messages, acks=acks if acks == "all" else int(acks),
                      compression_type=None if codec == "none" else codec)
        return await consume(shared_broker.bootstrap, topic, expected_total=len(messages))

    assert_same_partitions(messages, run(body()))


@pytest.mark.processes
def test_offsets_for_times_returns_first_offset_at_or_after_timestamp(shared_broker):
    topic, messages = unique_topic("aio-times"), offsets_for_times_messages("aio")
    partitions = [TopicPartition(topic, p) for p in sorted({m.partition for m in messages})]

    async def body():
        third = len(messages) // 3
        for chunk in (messages[:third], messages[third:2 * third], messages[2 * third:]):
            await produce(shared_broker.bootstrap, topic, chunk)  # several batches per partition
        consumer = AIOKafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None)
        await consumer.start()
        try:
            return [(timestamp, await consumer.offsets_for_times({tp: timestamp for tp in partitions}))
                    for timestamp in timestamp_probes(messages, 0)]
        finally:
            await consumer.stop()

    for timestamp, found in run(body()):
        for tp in partitions:
            expected = first_offset_at_or_after(messages, tp.partition, timestamp)
            assert (None if found[tp] is None else found[tp].offset) == expected, f"{tp} timestamp {timestamp}"


@pytest.mark.timeout(150)
def test_idempotent_producer_through_cutting_proxy_writes_each_message_once_in_order(tmp_path, caplog):
    caplog.set_level(logging.CRITICAL, logger="aiokafka")  # every cut logs a connection error
    topic, messages = unique_topic("aio-idempotent"), idempotence_messages(10_000, "aio")
    with broker_behind_proxy(tmp_path / "data", cut_every_bytes=64 * 1024, max_cuts=12) as (broker, proxy):
        async def body():
            await produce(proxy.bootstrap, topic, messages, enable_idempotence=True, acks="all",
                          linger_ms=2, max_batch_size=64 * 1024, retry_backoff_ms=20)
            proxy.stop_cutting()
            return await consume(proxy.bootstrap, topic)

        consumed = run(body())
        assert proxy.torn_requests > 0 and proxy.lost_responses > 0, (
            f"the proxy cut {proxy.cuts} times: {proxy.torn_requests} torn, {proxy.lost_responses} lost")
    assert_exactly_once(messages, consumed)


@pytest.mark.timeout(150)
def test_data_readable_after_clean_stop_and_after_sigkill_restart(tmp_path):
    broker, topic = start_broker(tmp_path / "data"), unique_topic("aio-restart")
    try:
        before_stop = make_messages(3000, "before-stop")
        run(produce(broker.bootstrap, topic, before_stop, acks="all"))
        assert broker.stop() == 0, broker.log()
        broker.start()
        assert_same_partitions(before_stop, run(consume(broker.bootstrap, topic)))

        before_kill = make_messages(3000, "before-kill", base_timestamp=now_ms())
        run(produce(broker.bootstrap, topic, before_kill, acks="all"))
        broker.restart(clean=False)
        assert_same_partitions(before_stop + before_kill, run(consume(broker.bootstrap, topic)))

        after_recovery = make_messages(600, "after-recovery", base_timestamp=now_ms())
        run(produce(broker.bootstrap, topic, after_recovery, acks="all"))
        assert_same_partitions(before_stop + before_kill + after_recovery, run(consume(broker.bootstrap, topic)))
    finally:
        broker.kill()

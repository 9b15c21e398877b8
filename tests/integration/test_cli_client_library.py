"""kcore.client, the library under the CLI, against a real broker subprocess:
pipelining, batch offsets, timestamp lookup, small fetch limits, admin calls
and reconnecting after a broker restart."""
import asyncio

from kcore.client import (
    Admin,
    ConfigResourceType,
    Consumer,
    KafkaClient,
    NewTopic,
    Producer,
    TopicPartition,
)
from kcore.client.fetch import FetchPosition, fetch, list_offsets, records_from
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.records import Record


def run(coroutine, timeout_s=60):
    return asyncio.run(asyncio.wait_for(coroutine, timeout_s))


async def _create(client, name, partitions):
    await Admin(client).create_topics([NewTopic(name, partitions)])


def test_batches_get_consecutive_base_offsets_and_read_back_whole(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap) as client:
            await _create(client, "batches", 1)
            producer = Producer(client, acks=-1)
            results = [await producer.send_batch("batches", 0, [
                Record(timestamp=1000 + 10 * i + j, key=b"k", value=b"%d-%d" % (i, j))
                for j in range(10)]) for i in range(3)]
            connection = await client.leader_connection("batches", 0)
            tp = TopicPartition("batches", 0)
            fetched = await fetch(connection, {tp: FetchPosition(15, 1 << 20)}, max_wait_ms=0)
            return results, fetched[tp], records_from(fetched[tp], 15)
    results, partition, got = run(scenario())
    assert [r.base_offset for r in results] == [0, 10, 20]
    assert partition.high_watermark == 30
    assert [r.offset for r in got.records] == list(range(15, 30))
    assert got.records[0].value == b"1-5" and got.next_offset == 30


def test_offsets_for_times_finds_the_first_record_at_or_after_a_timestamp(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap) as client:
            await _create(client, "timed", 1)
            await Producer(client).send_batch("timed", 0, [
                Record(timestamp=5000 + 100 * i, value=b"x") for i in range(10)])
            connection = await client.leader_connection("timed", 0)
            tp = TopicPartition("timed", 0)
            answers = {}
            for timestamp in (-2, -1, 4000, 5000, 5050, 5900, 5901):
                answers[timestamp] = (await list_offsets(connection, {tp: timestamp}))[tp].offset
            return answers
    assert run(scenario()) == {-2: 0, -1: 10, 4000: 0, 5000: 0, 5050: 1, 5900: 9, 5901: -1}


def test_a_consumer_with_tiny_fetch_limits_still_reads_every_record(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap) as client:
            await _create(client, "wide", 3)
            producer = Producer(client, linger_ms=50)
            for i in range(3000):
                await producer.send("wide", b"v%d" % i, key=b"%d" % i)
            await producer.flush()
            consumer = Consumer(client, partition_max_bytes=100, max_bytes=1000)
            await consumer.seek_to_beginning(await consumer.partitions_of("wide"))
            seen = {}
            for _ in range(300):
                for tp, records in (await consumer.poll(1.0)).items():
                    seen.setdefault(tp.partition, []).extend(r.offset for r in records)
                if sum(map(len, seen.values())) >= 3000:
                    break
            await consumer.close()
            return seen
    seen = run(scenario())
    assert sum(map(len, seen.values())) == 3000
    for offsets in seen.values():
        assert offsets == list(range(len(offsets)))


def test_many_pipelined_requests_on_one_connection_are_answered_in_order(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap) as client:
            names = [f"pipe-{i}" for i in range(5)]
            await Admin(client).create_topics([NewTopic(name, 1) for name in names])
            connection = await client.bootstrap()
            asked = [names[i % 5] for i in range(200)]
            answers = await asyncio.gather(*[
                connection.request(ApiKey.METADATA, {"topics": [{"name": name}],
                                                     "allow_auto_topic_creation": False})
                for name in asked])
            return asked, [answer.topics[0].name for answer in answers]
    asked, answered = run(scenario())
    assert answered == asked


def test_admin_grows_partitions_and_describes_cluster_and_configs(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap) as client:
            admin = Admin(client)
            await admin.create_topics([NewTopic("growing", 1, 1, {"retention.ms": "60000"})])
            await admin.create_partitions({"growing": 4})
            topics = await admin.describe_topics(["growing"])
            cluster = await admin.describe_cluster()
            configs = await admin.describe_configs(ConfigResourceType.TOPIC, ["growing"],
                                                   ["retention.ms", "cleanup.policy"])
            return topics[0], cluster, configs["growing"]
    topic, cluster, configs = run(scenario())
    assert sorted(topic.partitions) == [0, 1, 2, 3]
    assert list(cluster.brokers.values())[0].port == int(broker.bootstrap.rsplit(":", 1)[1])
    assert cluster.controller_id in cluster.brokers
    by_name = {entry.name: entry for entry in configs}
    assert by_name["retention.ms"].value == "60000" and not by_name["retention.ms"].is_default
    assert by_name["cleanup.policy"].value == "delete" and by_name["cleanup.policy"].is_default


def test_the_producer_retries_until_a_stopped_broker_is_back(broker):
    async def scenario():
        async with KafkaClient(broker.bootstrap, request_timeout_s=10) as client:
            await _create(client, "survivor", 1)
            producer = Producer(client, acks=-1, retries=30, retry_backoff_ms=100)
            await producer.send("survivor", b"before")
            await producer.flush()
            await asyncio.to_thread(broker.stop)
            await producer.send("survivor", b"after")
            sending = asyncio.ensure_future(producer.flush())
            await asyncio.sleep(0.5)
            assert not sending.done()
            await asyncio.to_thread(broker.start)
            await sending
            consumer = Consumer(client)
            await consumer.seek_to_beginning([TopicPartition("survivor", 0)])
            values = []
            while len(values) < 2:
                for records in (await consumer.poll(2.0)).values():
                    values += [r.value for r in records]
            await consumer.close()
            return values, producer.stats.retries
    values, retries = run(scenario())
    assert values == [b"before", b"after"]
    assert retries >= 1

"""Batch reads through the "kcore" data source in a real local[2] Spark
against a real broker, compared with what confluent-kafka produced."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support import free_port
from tests.support.compat import make_messages, unique_topic, wait_until
from tests.support.confluent import new_consumer, produce
from tests.support.spark import create_topic, read

PARTITIONS = 8
COUNT = 100_000


@pytest.fixture(scope="module")
def produced(kafka):
    topic = unique_topic("spark-read")
    messages = make_messages(COUNT, "spark", PARTITIONS)
    create_topic(kafka, NewTopic(topic, PARTITIONS, 1))
    produce(kafka.bootstrap, topic, messages)
    return topic, messages


def test_batch_read_of_100k_keyed_messages_matches_what_was_produced(spark, kafka, produced):
    topic, messages = produced
    rows = read(spark, kafka, subscribe=topic, includeHeaders="true").selectExpr(
        "topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ms", "timestampType",
        "headers").collect()
    assert len(rows) == COUNT
    got = {(r.partition, r.offset): r for r in rows}
    for index, message in enumerate(messages):
        row = got[(message.partition, index // PARTITIONS)]  # round-robin: the n-th of its partition
        assert (row.topic, row.key, row.value) == (topic, message.key, message.value)
        assert (row.ms, row.timestampType) == (message.timestamp, 0)  # CreateTime
        assert tuple((h.key, bytes(h.value)) for h in row.headers) == message.headers


def test_offset_ranges_per_partition_and_min_partitions(spark, kafka, produced):
    topic, _ = produced
    df = read(spark, kafka, subscribe=topic, minPartitions="20",
              startingOffsets=f'{{"{topic}": {{"0": 100, "3": -2}}}}',
              endingOffsets=f'{{"{topic}": {{"0": 250, "3": 40}}}}')
    assert df.rdd.getNumPartitions() >= 20
    spans = {r.partition: (r.lo, r.hi, r.n) for r in
             df.groupBy("partition").agg({"offset": "min"}).withColumnRenamed("min(offset)", "lo")
             .join(df.groupBy("partition").agg({"offset": "max"}).withColumnRenamed("max(offset)", "hi"),
                   "partition")
             .join(df.groupBy("partition").count().withColumnRenamed("count", "n"), "partition").collect()}
    assert spans == {0: (100, 249, 150), 3: (0, 39, 40)}


def test_assign_and_starting_timestamp(spark, kafka, produced):
    topic, messages = produced
    mine = [m for m in messages if m.partition == 5]
    cut = mine[1000].timestamp
    df = read(spark, kafka, assign=f'{{"{topic}": [5]}}', startingTimestamp=str(cut))
    assert df.count() == len(mine) - 1000
    assert df.selectExpr("min(offset)").first()[0] == 1000


def test_a_missing_topic_is_a_clear_error(spark, kafka):
    with pytest.raises(Exception, match="do not exist on the cluster"):
        read(spark, kafka, subscribe="no-such-topic-anywhere").collect()


def test_an_unreachable_broker_fails_within_the_api_timeout(spark):
    started = time.monotonic()
    with pytest.raises(Exception, match="cannot read the topic list"):
        (spark.read.format("kcore").option("kafka.bootstrap.servers", f"127.0.0.1:{free_port()}")
         .option("kafka.default.api.timeout.ms", "2000").option("subscribe", "t").load().collect())
    assert time.monotonic() - started < 30


def _retention_topic(kafka) -> tuple[str, int]:
    """A topic whose first segments retention deleted: (topic, earliest)."""
    topic = unique_topic("spark-retention")
    create_topic(kafka, NewTopic(topic, 1, 1, config={"segment.bytes": "16384", "retention.ms": "60000"}))
    small_batches = {"batch.size": 4096}  # several segments of 16 KiB
    # make_messages stamps records an hour ago: past retention.ms at once;
    # the new ones, stamped now, stay for the test.
    produce(kafka.bootstrap, topic, make_messages(300, "old", 1), **small_batches)
    produce(kafka.bootstrap, topic, make_messages(50, "new", 1, base_timestamp=int(time.time() * 1000)),
            **small_batches)
    consumer = new_consumer(kafka.bootstrap)
    try:
        wait_until(lambda: consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0] > 0, 30,
                   "retention to delete the first segments")
        return topic, consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]
    finally:
        consumer.close()


def test_offsets_deleted_by_retention_fail_or_are_skipped_with_fail_on_data_loss(spark, kafka):
    topic, earliest = _retention_topic(kafka)
    start = f'{{"{topic}": {{"0": 0}}}}'
    with pytest.raises(Exception, match="out of range.*failOnDataLoss"):
        read(spark, kafka, subscribe=topic, startingOffsets=start).collect()
    rows = read(spark, kafka, subscribe=topic, startingOffsets=start, failOnDataLoss="false").collect()
    assert min(r.offset for r in rows) == earliest and max(r.offset for r in rows) == 349

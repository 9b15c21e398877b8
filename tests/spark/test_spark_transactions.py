"""Transactional writes and read_committed reads through the "kcore" data
source, in a real local[2] Spark (one attempt per task: a failed task
fails its job) against a real broker.

One single-partition topic holds, in order: 1000 committed rows (a-*),
what a task that failed midway sent before it failed (b-*, aborted) and
1000 committed rows (c-*), so offsets, commit and abort markers are easy
to reason about: a-* at 0-999, A's commit marker at 1000, then b-*."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import NewTopic
from pyspark.sql.functions import udf

from tests.spark.test_spark_read import create_topic, read
from tests.support.compat import unique_topic
from tests.support.confluent import consume_to_end

FAILING_ROWS = 20_000
# The row whose UDF call raises, once the writer's first rows are in the
# log: Spark passes the writer's input on in 64 KiB (spark.buffer.size)
# chunks of Arrow batches, several thousand of these short rows each.
FAILS_AT = 15_000
# Rows per Arrow batch to the writer (spark.sql.execution.arrow.maxRecordsPerBatch,
# 10,000 by default): small, so the writer gets rows before the failing one.
ARROW_BATCH = "1000"
WAIT_FOR_ROWS_S = 30
COMMITTED = [f"a-{i}".encode() for i in range(1000)] + [f"c-{i}".encode() for i in range(1000)]


def failing_at(bootstrap: str, topic: str, before: int):
    """A UDF that raises at row FAILS_AT, once the topic's high watermark
    passed ``before``: the task has sent rows of its transaction."""
    def fail_at(value: str) -> str:
        if value != f"b-{FAILS_AT}":
            return value
        import time

        from confluent_kafka import Consumer, TopicPartition
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe",
                             "isolation.level": "read_uncommitted"})
        deadline = time.monotonic() + WAIT_FOR_ROWS_S
        while (consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1] <= before
               and time.monotonic() < deadline):
            time.sleep(0.05)
        consumer.close()
        raise ValueError(f"no row {value} for you")
    return udf(fail_at, "string")


def write(df, kafka, topic: str, **options) -> None:
    writer = df.write.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", topic)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def rows(spark, prefix: str, count: int):
    return spark.range(count, numPartitions=1).selectExpr(f"concat('{prefix}-', id) AS value")


@pytest.fixture(scope="module")
def with_aborted(spark, kafka) -> str:
    topic = unique_topic("spark-txn")
    create_topic(kafka, NewTopic(topic, 1, 1))
    write(rows(spark, "a", 1000), kafka, topic)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", ARROW_BATCH)
    try:
        with pytest.raises(Exception, match=f"no row b-{FAILS_AT} for you"):
            fail_at = failing_at(kafka.bootstrap, topic, before=1001)  # a-* and their commit marker
            write(rows(spark, "b", FAILING_ROWS).select(fail_at("value").alias("value")), kafka, topic)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    write(rows(spark, "c", 1000), kafka, topic)
    return topic


def values(messages) -> list[bytes]:
    return [m.value for m in messages]


def test_a_failed_write_task_leaves_nothing_for_read_committed_readers(kafka, with_aborted):
    assert values(consume_to_end(kafka.bootstrap, with_aborted, [0])) == COMMITTED
    everything = values(consume_to_end(kafka.bootstrap, with_aborted, [0], "read_uncommitted"))
    aborted = everything[1000:-1000]
    assert everything[:1000] + everything[-1000:] == COMMITTED
    assert aborted, "the failed task sent nothing before it failed"
    assert aborted == [f"b-{i}".encode() for i in range(len(aborted))] and len(aborted) < FAILS_AT


def test_a_read_committed_batch_read_returns_committed_rows_only_and_finishes(spark, kafka, with_aborted):
    committed = read(spark, kafka, subscribe=with_aborted, **{"kafka.isolation.level": "read_committed"})
    assert [bytes(r.value) for r in committed.orderBy("offset").collect()] == COMMITTED
    uncommitted = read(spark, kafka, subscribe=with_aborted).collect()
    assert len(uncommitted) > len(COMMITTED)


@pytest.mark.parametrize("start, end, expected", [
    (0, 1000, COMMITTED[:1000]),    # ends on A's commit marker
    (0, 1500, COMMITTED[:1000]),    # ends inside the aborted transaction; its last third
                                    # (minPartitions) holds a marker and aborted records only
    (1200, -1, COMMITTED[1000:]),   # starts inside the aborted transaction
])
def test_read_committed_ranges_end_by_offset_on_markers_and_aborted_records(spark, kafka, with_aborted,
                                                                            start, end, expected):
    df = read(spark, kafka, subscribe=with_aborted, minPartitions="3",
              startingOffsets=f'{{"{with_aborted}": {{"0": {start}}}}}',
              endingOffsets=f'{{"{with_aborted}": {{"0": {end}}}}}',
              **{"kafka.isolation.level": "read_committed", "kafkaConsumer.pollTimeoutMs": "20000"})
    assert [bytes(r.value) for r in df.orderBy("offset").collect()] == expected

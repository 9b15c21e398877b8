"""Transactional writes and read_committed reads through the "kcore" data
source, in a real local[2] Spark (one attempt per task: a failed task
fails its job) against a real broker.

One single-partition topic holds, in order: 1000 committed rows (a-*),
what a task that failed midway sent before it failed (b-*, aborted) and
1000 committed rows (c-*), so offsets, commit and abort markers are easy
to reason about: a-* at 0-999, A's commit marker at 1000, then b-*.

A write task is held midway by its own rows: from row ``at`` on, each row
sleeps 100 ms in the JVM (``java_method``) until a Java system property is
set, which a thread of the test sets once the task's first rows are in
the log (local mode: the executors are the driver's JVM). The write runs
in the test's main thread: PySpark finds a data source registered on the
session only from the thread that registered it."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from kcore.spark.options import sink_options
from kcore.spark.source import KcoreBatchWriter
from kcore.spark.write import WriteCommit, transactional_id
from tests.support.compat import unique_topic, wait_until
from tests.support.confluent import consume_to_end
from tests.support.spark import create_topic, read

ROWS = 20_000
# Where the task is held: Spark passes the writer's input on in 64 KiB
# (spark.buffer.size) chunks of Arrow batches, so ~13,000 of the 15,000
# rows before it are in the log while it waits.
HELD_AT = 15_000
# At most 300 rows x 100 ms: a task is never held longer than 30 s.
HELD_ROWS = 300
HELD_ROW_MS = 100
# Rows per Arrow batch to the writer (spark.sql.execution.arrow.maxRecordsPerBatch,
# 10,000 by default): small, so the writer gets rows before the held one.
ARROW_BATCH = "1000"
WAIT_FOR_ROWS_S = 30
COMMITTED = [f"a-{i}".encode() for i in range(1000)] + [f"c-{i}".encode() for i in range(1000)]


def rows(spark, prefix: str, count: int, held_by: str | None = None, fail: bool = False):
    """``<prefix>-<n>`` values in one task; ``held_by``: the system property
    that releases the task held at HELD_AT; ``fail``: the task then fails
    at the row after the held ones, upstream of the writer."""
    value = f"concat('{prefix}-', id)"
    if held_by is not None:
        # Thread.sleep returns void, which java_method gives as "null": cut to ''.
        sleep = f"left(coalesce(java_method('java.lang.Thread', 'sleep', {HELD_ROW_MS}L), ''), 0)"
        released = f"java_method('java.lang.Boolean', 'getBoolean', '{held_by}')"
        value = (f"concat({value}, CASE WHEN id >= {HELD_AT} AND id < {HELD_AT + HELD_ROWS} "
                 f"AND NOT {released} THEN {sleep} ELSE '' END)")
    if fail:
        value = f"IF(id = {HELD_AT + HELD_ROWS}, raise_error('no row {prefix}-{HELD_AT + HELD_ROWS} for you'), {value})"
    return spark.range(count, numPartitions=1).selectExpr(f"{value} AS value")


class Held:
    """A thread that waits (bounded) until ``topic`` holds more than
    ``before`` offsets, runs ``check`` and releases the held task, even
    when the wait or the check failed; ``seen`` is what ``check`` returned."""

    def __init__(self, spark, kafka, topic: str, before: int, check: Callable[[], Any] = lambda: None):
        self.spark, self.kafka, self.topic, self.before, self.check = spark, kafka, topic, before, check
        self.property = f"kcore.test.release.{topic}"
        self.seen: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            wait_until(lambda: end_offset(self.kafka, self.topic, "read_uncommitted") > self.before,
                       WAIT_FOR_ROWS_S, "the held task's first rows in the log")
            self.seen = self.check()
        except BaseException as exc:  # reported by the test's thread
            self.error = exc
        finally:
            self.spark._jvm.java.lang.System.setProperty(self.property, "true")

    def __enter__(self) -> Held:
        self.spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", ARROW_BATCH)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._thread.join(WAIT_FOR_ROWS_S * 2)
        self.spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
        assert not self._thread.is_alive()
        if self.error is not None:
            raise self.error


def end_offset(kafka, topic: str, isolation_level: str) -> int:
    """Partition 0's end: the high watermark, or for read_committed the
    last stable offset."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "probe",
                         "isolation.level": isolation_level})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()


def write(df, kafka, topic: str, **options) -> None:
    writer = df.write.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", topic)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


@pytest.fixture(scope="module")
def with_aborted(spark, kafka) -> str:
    topic = unique_topic("spark-txn")
    create_topic(kafka, NewTopic(topic, 1, 1))
    write(rows(spark, "a", 1000), kafka, topic)
    with Held(spark, kafka, topic, before=1001) as held:  # a-* and their commit marker
        with pytest.raises(Exception, match=f"no row b-{HELD_AT + HELD_ROWS} for you"):
            write(rows(spark, "b", ROWS, held.property, fail=True), kafka, topic)
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
    assert aborted == [f"b-{i}".encode() for i in range(len(aborted))] and len(aborted) <= HELD_AT + HELD_ROWS


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


def test_a_transactional_write_is_visible_to_read_committed_only_after_the_task_commits(spark, kafka):
    topic = unique_topic("spark-txn-visible")
    create_topic(kafka, NewTopic(topic, 1, 1))

    def while_held() -> tuple[int, list, int]:
        return (end_offset(kafka, topic, "read_committed"), consume_to_end(kafka.bootstrap, topic, [0]),
                len(consume_to_end(kafka.bootstrap, topic, [0], "read_uncommitted")))

    with Held(spark, kafka, topic, before=0, check=while_held) as held:
        write(rows(spark, "v", ROWS, held.property), kafka, topic)
    last_stable, committed, uncommitted = held.seen
    assert last_stable == 0 and committed == []  # the open transaction holds read_committed readers at 0
    assert 0 < uncommitted <= HELD_AT
    assert values(consume_to_end(kafka.bootstrap, topic, [0])) == [f"v-{i}".encode() for i in range(ROWS)]
    assert end_offset(kafka, topic, "read_committed") == ROWS + 1  # the rows and one commit marker


def transaction(kafka, topic: str, txn_id: str, prefix: str, count: int) -> Producer:
    """A transactional producer with ``count`` rows sent in an open transaction."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    return producer


def test_a_read_committed_batch_read_stops_at_an_open_transaction(spark, kafka):
    """Committed (a-*), open (o-*), committed after the open one began (c-*):
    read_committed reads up to the last stable offset, where o-* begins,
    and finishes there; once o-* commits, everything."""
    topic = unique_topic("spark-txn-open")
    create_topic(kafka, NewTopic(topic, 1, 1))
    transaction(kafka, topic, f"{topic}-a", "a", 100).commit_transaction(10)
    held = transaction(kafka, topic, f"{topic}-o", "o", 50)
    transaction(kafka, topic, f"{topic}-c", "c", 100).commit_transaction(10)
    committed = {"kafka.isolation.level": "read_committed", "kafkaConsumer.pollTimeoutMs": "10000"}

    def read_values(**options) -> list[bytes]:
        df = read(spark, kafka, subscribe=topic, minPartitions="2", **options)
        return [bytes(r.value) for r in df.orderBy("offset").collect()]

    a, o, c = ([f"{p}-{i}".encode() for i in range(n)] for p, n in (("a", 100), ("o", 50), ("c", 100)))
    assert read_values(**committed) == a
    assert read_values() == a + o + c  # read_uncommitted, Spark's default
    held.commit_transaction(10)
    assert read_values(**committed) == a + o + c


def test_a_failed_write_is_fenced_by_the_drivers_abort(kafka):
    """A task that died with its transaction open (no retry, no abort of its
    own): the batch writer's abort on the driver fences its id, which
    aborts the transaction and frees read_committed readers."""
    topic = unique_topic("spark-txn-fence")
    create_topic(kafka, NewTopic(topic, 1, 1))
    writer = KcoreBatchWriter(sink_options({"kafka.bootstrap.servers": kafka.bootstrap, "topic": topic}),
                              ["value"])
    dead = transaction(kafka, topic, transactional_id("kcore-spark", writer.write_id, 1), "d", 10)
    assert end_offset(kafka, topic, "read_committed") == 0
    writer.abort([WriteCommit(0, None), None])  # task 0 succeeded (with no rows), task 1 failed
    assert end_offset(kafka, topic, "read_committed") == 11  # past the aborted rows and their marker
    assert consume_to_end(kafka.bootstrap, topic, [0]) == []
    assert len(consume_to_end(kafka.bootstrap, topic, [0], "read_uncommitted")) == 10
    with pytest.raises(KafkaException, match="FENCED"):
        dead.commit_transaction(10)


def test_a_row_the_writer_refuses_aborts_the_tasks_transaction(spark, kafka):
    """A null topic at row HELD_AT: writing the rows before it takes tens
    of ms of Python, past librdkafka's linger (5 ms), so some were sent."""
    topic = unique_topic("spark-txn-refused")
    create_topic(kafka, NewTopic(topic, 1, 1))
    df = spark.range(ROWS, numPartitions=1).selectExpr(
        f"IF(id = {HELD_AT}, NULL, '{topic}') AS topic", "concat('r-', id) AS value")
    with pytest.raises(Exception, match="null topic present"):
        df.write.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap).mode("append").save()
    assert consume_to_end(kafka.bootstrap, topic, [0]) == []
    aborted = values(consume_to_end(kafka.bootstrap, topic, [0], "read_uncommitted"))
    assert aborted and aborted == [f"r-{i}".encode() for i in range(len(aborted))]
    # Aborted, not left open: nothing holds read_committed readers back.
    assert end_offset(kafka, topic, "read_committed") == end_offset(kafka, topic, "read_uncommitted")

"""Transactional streaming writes through the "kcore" data source, in a
real local[2] Spark against a real broker: a micro-batch whose one task
fails midway leaves nothing for read_committed readers, and the query
restarted from its checkpoint writes that micro-batch again, so the sink
holds every source record once."""
from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka.admin import NewTopic
from pyspark.errors import StreamingQueryException

from tests.support.cli import kcore_cli
from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import consume_to_end, produce
from tests.support.spark import QUERY_TIMEOUT_S, create_topic, stream

COUNT = 1000
PER_TRIGGER = 500  # maxOffsetsPerTrigger: micro-batches of offsets [0, 500) and [500, 1000)
FAILS_AT = 700     # in the second


def transactional_ids(kafka, prefix: str) -> list[tuple[str, str]]:
    """(transactional id, state) of the ids under ``prefix``, from `kcore transactions list`."""
    listed = kcore_cli("transactions", "list", "--bootstrap-server", kafka.bootstrap)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    return sorted((row[0], row[3]) for row in rows if row and row[0].startswith(prefix))


def test_a_failed_micro_batch_is_aborted_and_written_once_after_a_restart(spark, kafka, tmp_path):
    source, sink = unique_topic("spark-txn-source"), unique_topic("spark-txn-sink")
    create_topic(kafka, NewTopic(source, 1, 1))  # one task per micro-batch
    create_topic(kafka, NewTopic(sink, 2, 1))
    messages = make_messages(COUNT, "s", 1)
    produce(kafka.bootstrap, source, messages)
    released = f"kcore.test.release.{sink}"  # a Java system property: the executors are the driver's JVM
    prefix = f"orders-{sink}"
    df = stream(spark, kafka, source, startingOffsets="earliest", maxOffsetsPerTrigger=str(PER_TRIGGER)).selectExpr(
        "key", f"IF(offset = {FAILS_AT} AND NOT java_method('java.lang.Boolean', 'getBoolean', '{released}'), "
               "raise_error('the micro-batch fails'), value) AS value")

    def start():
        return (df.writeStream.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap)
                .option("topic", sink).option("kcore.transactional.id.prefix", prefix)
                .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())

    failed = start()
    with pytest.raises(StreamingQueryException, match="the micro-batch fails"):
        failed.awaitTermination(QUERY_TIMEOUT_S)
    committed = consume_to_end(kafka.bootstrap, sink, range(2))
    assert Counter((m.key, m.value) for m in committed) == Counter((m.key, m.value) for m in messages[:PER_TRIGGER])

    spark._jvm.java.lang.System.setProperty(released, "true")
    restarted = start()
    assert restarted.awaitTermination(QUERY_TIMEOUT_S), "the query did not finish"
    assert restarted.id == failed.id  # the checkpoint's query id, which names the transactional ids
    committed = consume_to_end(kafka.bootstrap, sink, range(2))
    assert Counter((m.key, m.value) for m in committed) == Counter((m.key, m.value) for m in messages)
    assert transactional_ids(kafka, prefix) == [(f"{prefix}-{failed.id}-0", "CompleteCommit")]

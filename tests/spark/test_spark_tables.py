"""PySpark reads a topic's Iceberg table (docs/tables.md) from its Parquet
data files, as listed by the table's current snapshot (Iceberg's own
Spark runtime is a JVM package that this machine cannot download): every
record of the topic once, with its columns."""
from __future__ import annotations

from confluent_kafka.admin import NewTopic

from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import produce
from tests.support.spark import create_topic
from tests.support.tables import catalog_of, wait_for_offsets

PARTITIONS = 4
COUNT = 4000


def test_spark_reads_the_parquet_files_of_a_topics_table(spark, kafka):
    topic = unique_topic("spark-table")
    create_topic(kafka, NewTopic(topic, PARTITIONS, 1, config={"kcore.table.mode": "key_value",
                                                               "kcore.table.commit.interval.ms": "300"}))
    messages = make_messages(COUNT, "st", PARTITIONS)
    produce(kafka.bootstrap, topic, messages)
    wait_for_offsets(kafka.data_dir, topic, {p: COUNT // PARTITIONS for p in range(PARTITIONS)})
    table = catalog_of(kafka.data_dir).load_table(("kcore", topic))
    files = [task.file.file_path for task in table.scan().plan_files()]
    assert files and all(path.endswith(".parquet") for path in files)
    frame = spark.read.parquet(*files)
    assert {"partition", "offset", "timestamp", "key", "value", "headers"} <= set(frame.columns)
    rows = frame.select("partition", "offset", "key", "value").collect()
    assert len(rows) == COUNT
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(
        (p, o) for p in range(PARTITIONS) for o in range(COUNT // PARTITIONS))
    assert sorted(bytes(r["value"]) for r in rows) == sorted(m.value for m in messages)

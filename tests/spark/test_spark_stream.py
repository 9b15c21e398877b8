"""Structured Streaming through the "kcore" data source, and writes: a
query restarted from its checkpoint, DataFrames written to topics and read
back by confluent-kafka, the README's access-log pipeline."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import NewTopic

from tests.support.compat import make_messages, unique_topic
from tests.support.confluent import consume, consume_to_end, produce
from tests.support.spark import QUERY_TIMEOUT_S, create_topic, stream

PARTITIONS = 4
def run_available_now(df, sink_dir, checkpoint) -> list:
    query = (df.writeStream.format("parquet").option("path", str(sink_dir))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the query did not finish"
    assert query.exception() is None, query.exception()
    return query.recentProgress


def test_a_query_restarted_from_its_checkpoint_reads_every_message_exactly_once(spark, kafka, tmp_path):
    topic = unique_topic("spark-stream")
    create_topic(kafka, NewTopic(topic, PARTITIONS, 1))
    first, second = make_messages(2000, "first", PARTITIONS), make_messages(1500, "second", PARTITIONS)
    produce(kafka.bootstrap, topic, first)
    df = stream(spark, kafka, topic, startingOffsets="earliest", maxOffsetsPerTrigger="500")
    progress = run_available_now(df, tmp_path / "out", tmp_path / "checkpoint")
    assert sum(p["numInputRows"] for p in progress) == 2000
    assert max(p["numInputRows"] for p in progress) <= 500 + PARTITIONS  # maxOffsetsPerTrigger
    produce(kafka.bootstrap, topic, second)
    run_available_now(df, tmp_path / "out", tmp_path / "checkpoint")
    rows = spark.read.parquet(str(tmp_path / "out")).select("partition", "offset", "value").collect()
    assert len(rows) == 3500
    assert len({(r.partition, r.offset) for r in rows}) == 3500
    assert sorted(r.value for r in rows) == sorted(m.value for m in first + second)


@pytest.mark.parametrize("transactional", ["true", "false"])
def test_a_dataframe_written_to_a_topic_is_read_back_by_confluent_kafka(spark, kafka, transactional):
    topic = unique_topic("spark-write")
    create_topic(kafka, NewTopic(topic, PARTITIONS, 1))
    data = [(f"k{i}", f"value {i}".encode(), i % PARTITIONS, [("n", str(i).encode())]) for i in range(3000)]
    df = spark.createDataFrame(data, "key string, value binary, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    (df.write.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", topic)
     .option("kcore.transactional", transactional).mode("append").save())
    if transactional == "true":  # commit markers take offsets: read up to the end offsets
        got = consume_to_end(kafka.bootstrap, topic, partitions=range(PARTITIONS))
    else:  # no markers: offsets are contiguous, as consume() checks
        got = consume(kafka.bootstrap, topic, 3000, partitions=range(PARTITIONS))
    assert sorted((m.partition, m.key, m.value, m.headers) for m in got) == sorted(
        (p, k.encode(), v, (("n", h[0][1]),)) for k, v, p, h in data)


def test_writes_refuse_a_frame_without_value_and_overwrite(spark, kafka):
    df = spark.createDataFrame([("a",)], "key string")
    writer = df.write.format("kcore").option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", "t")
    with pytest.raises(Exception, match="required attribute 'value' not found"):
        writer.mode("append").save()
    with pytest.raises(Exception, match="cannot be overwritten"):
        df.selectExpr("key AS value").write.format("kcore").option(
            "kafka.bootstrap.servers", kafka.bootstrap).option("topic", "t").mode("overwrite").save()


def test_the_readme_pipeline_counts_access_log_statuses_into_a_results_topic(spark, kafka, tmp_path):
    logs, results = unique_topic("access-log"), unique_topic("status-counts")
    create_topic(kafka, NewTopic(logs, PARTITIONS, 1))
    lines = [f'10.0.0.{i % 7} - - "GET /page/{i % 5} HTTP/1.1" {(200, 404, 500)[i % 3]} {i}'.encode()
             for i in range(900)]
    produce(kafka.bootstrap, logs, [m.__class__(i % PARTITIONS, None, line, (), m.timestamp)
                                    for i, (m, line) in enumerate(zip(make_messages(900, "x"), lines))])
    counts = (stream(spark, kafka, logs, startingOffsets="earliest")
              .selectExpr(r"regexp_extract(CAST(value AS STRING), '\" (\\d{3}) ', 1) AS status")
              .groupBy("status").count()
              .selectExpr("status AS key", "CAST(count AS STRING) AS value"))
    query = (counts.writeStream.format("kcore").outputMode("complete")
             .option("kafka.bootstrap.servers", kafka.bootstrap).option("topic", results)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S) and query.exception() is None
    got = {m.key: m.value for m in consume_to_end(kafka.bootstrap, results, partitions=range(PARTITIONS))}
    assert got == {b"200": b"300", b"404": b"300", b"500": b"300"}

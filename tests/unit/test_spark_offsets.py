"""kcore.spark's option parsing and offset planning, without Spark or a
broker: the numbers each task and micro-batch gets."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore.spark import offsets
from kcore.spark.offsets import DataLossError, OffsetRange
from kcore.spark.options import OffsetLimit, OptionError, sink_options, source_options
from kcore.spark.write import transactional_id

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a,b"}


def test_options_take_sparks_names_case_insensitively():
    options = source_options({**BASE, "STARTINGOFFSETS": '{"a":{"0":5,"1":-2}}', "endingOffsets": "latest",
                              "failOnDataLoss": "false", "includeHeaders": "true", "minPartitions": "8",
                              "kafka.fetch.max.bytes": "1048576"}, streaming=False)
    assert options.strategy.topics == ("a", "b")
    assert options.starting == OffsetLimit("offsets", offsets={("a", 0): 5, ("a", 1): -2})
    assert options.ending.kind == "latest"
    assert not options.fail_on_data_loss and options.include_headers and options.min_partitions == 8
    assert options.client.kafka_params == {"bootstrap.servers": "127.0.0.1:9092", "fetch.max.bytes": "1048576",
                                           "isolation.level": "read_uncommitted"}


def test_reads_are_read_uncommitted_as_in_spark_unless_kafka_isolation_level_says_otherwise():
    assert source_options(BASE, streaming=False).client.kafka_params["isolation.level"] == "read_uncommitted"
    committed = source_options({**BASE, "kafka.isolation.level": " READ_COMMITTED"}, streaming=True)
    assert committed.client.kafka_params["isolation.level"] == "read_committed"
    with pytest.raises(OptionError, match="read_uncommitted or read_committed"):
        source_options({**BASE, "kafka.isolation.level": "serializable"}, streaming=False)


@pytest.mark.parametrize("extra, message", [
    ({"subscribePattern": "a.*"}, "exactly one of"),
    ({"startingOffsets": "latest"}, "can't be latest"),
    ({"endingOffsets": '{"a":{"0":-2}}'}, "can't be earliest"),
    ({"kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
    ({"minPartitions": "0"}, "must be positive"),
    ({"startingOffsets": '{"a":{"0":9}}', "endingOffsets": '{"a":{"0":3}}'}, "after its ending offset"),
])
def test_batch_options_refuse_what_spark_refuses(extra, message):
    with pytest.raises(OptionError, match=message):
        source_options({**BASE, **extra}, streaming=False)


def test_streams_start_at_latest_and_refuse_ending_offsets():
    assert source_options(BASE, streaming=True).starting.kind == "latest"
    with pytest.raises(OptionError, match="not valid in streaming"):
        source_options({**BASE, "endingOffsets": "latest"}, streaming=True)


def test_sink_needs_brokers():
    with pytest.raises(OptionError, match="kafka.bootstrap.servers"):
        sink_options({"topic": "t"})
    assert sink_options({"kafka.bootstrap.servers": "h:1", "topic": " t "}).topic == "t"


def test_sinks_are_transactional_unless_turned_off_and_take_an_id_prefix():
    sink = {"kafka.bootstrap.servers": "h:1", "topic": "t"}
    default = sink_options(sink)
    assert default.transactional and default.transactional_id_prefix == "kcore-spark"
    custom = sink_options({**sink, "kcore.transactional.id.prefix": "orders-etl", "KCORE.TRANSACTIONAL": "false"})
    assert not custom.transactional and custom.transactional_id_prefix == "orders-etl"
    assert transactional_id("orders-etl", "q-1", 3) == "orders-etl-q-1-3"
    with pytest.raises(OptionError, match="kcore.transactional.id.prefix"):
        sink_options({**sink, "kafka.transactional.id": "mine"})
    with pytest.raises(OptionError, match="is empty"):
        sink_options({**sink, "kcore.transactional.id.prefix": " "})
    with pytest.raises(OptionError, match="true or false"):
        sink_options({**sink, "kcore.transactional": "maybe"})


def test_resolve_maps_earliest_latest_and_timestamps():
    marks = {("a", 0): (10, 100), ("a", 1): (0, 7)}
    assert offsets.resolve(OffsetLimit("earliest"), marks) == {("a", 0): 10, ("a", 1): 0}
    assert offsets.resolve(OffsetLimit("offsets", offsets={("a", 0): -1}), marks) == {("a", 0): 100, ("a", 1): 0}
    by_time = {("a", 0): 42, ("a", 1): None}
    assert offsets.resolve(OffsetLimit("timestamp", timestamp=5), marks, by_time) == {("a", 0): 42, ("a", 1): 7}


def test_a_start_outside_the_log_is_data_loss_or_the_earliest_offset():
    marks = {("a", 0): (10, 100)}
    with pytest.raises(DataLossError, match=r"offset 3 of a-0 is out of range.*\[10, 100\)"):
        offsets.check_start(("a", 0), 3, marks, fail_on_data_loss=True)
    assert offsets.check_start(("a", 0), 3, marks, fail_on_data_loss=False) == 10
    assert offsets.check_start(("a", 0), 500, marks, fail_on_data_loss=False) == 100
    with pytest.raises(DataLossError, match="a-1 have been lost"):
        offsets.check_lost([("a", 1)], fail_on_data_loss=True)


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=6), st.integers(1, 40))
def test_split_covers_each_range_exactly_and_reaches_min_partitions(sizes, min_partitions):
    ranges = [OffsetRange("t", i, 100 * i, 100 * i + size) for i, size in enumerate(sizes) if size]
    parts = offsets.split(ranges, min_partitions)
    for rng in ranges:
        mine = [p for p in parts if p.partition == rng.partition]
        assert mine[0].from_offset == rng.from_offset and mine[-1].until_offset == rng.until_offset
        assert all(a.until_offset == b.from_offset for a, b in zip(mine, mine[1:]))
        assert all(p.size > 0 for p in mine)
    assert len(parts) >= min(min_partitions, sum(r.size for r in ranges))


@given(st.dictionaries(st.integers(0, 7), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.integers(1, 3000))
def test_rate_limit_reads_at_most_the_limit_and_never_goes_back(marks, limit):
    starts = {("t", p): min(a, b) for p, (a, b) in marks.items()}
    latest = {("t", p): max(a, b) for p, (a, b) in marks.items()}
    ends = offsets.rate_limit(starts, latest, limit)
    assert all(starts[key] <= ends[key] <= latest[key] for key in latest)
    waiting = sum(latest[key] - starts[key] for key in latest)
    moved = sum(ends[key] - starts[key] for key in latest)
    # Spark's rounding: a partition with a share below one offset moves by one.
    assert moved == waiting if waiting <= limit else moved <= limit + len(latest)


def test_stream_offsets_are_sparks_kafka_json():
    as_json = offsets.to_json({("b", 1): 5, ("a", 0): 7, ("a", 10): 1})
    assert as_json == {"a": {"0": 7, "10": 1}, "b": {"1": 5}}
    assert offsets.from_json(as_json) == {("b", 1): 5, ("a", 0): 7, ("a", 10): 1}


def test_spark_finds_the_source_as_the_default_source_of_a_pyspark_module():
    from pyspark.sql.datasource import DataSource

    import pyspark_kcore
    assert issubclass(pyspark_kcore.DefaultSource, DataSource)
    assert pyspark_kcore.DefaultSource.name() == "kcore"

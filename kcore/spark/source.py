"""The "kcore" data source: Spark's Kafka source and sink, in Python.

Spark runs ``KcoreDataSource`` in three places: the planner (schema,
options, the batch's ranges), the driver's streaming runner (stream
offsets, one long-lived ``KcoreStreamReader``) and the executors (reading
ranges, writing rows). Readers and writers are pickled from the driver to
the executors: they hold options and ranges only; the driver's client is
opened on first use and left out of the pickle.

A transactional write task's ``transactional.id`` (write.py) is
``<prefix>-<write id>-<partition id>``: for ``df.write`` the write id is a
UUID the driver draws for the write, for a stream it is the query's id
(kept in its checkpoint, the same after a restart) and the id is reused by
every micro-batch, one micro-batch's tasks ending before the next one's
start: so each attempt of a task, and the re-run of a micro-batch after a
restart, fences the one before it, and a query uses as many ids (and
producer ids) as it has write partitions, however long it runs.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kcore.spark import offsets, task_input
from kcore.spark.cluster import ClusterView
from kcore.spark.offsets import OffsetRange
from kcore.spark.options import SinkOptions, SourceOptions, TopicPartition, sink_options, source_options
from kcore.spark.read import kafka_schema, read_range
from kcore.spark.registry_format import value_format
from kcore.spark.write import RowWriter, WriteCommit, check_schema, fence, transactional_id

log = logging.getLogger(__name__)

# The local property Spark's stream execution sets on its tasks
# (StreamExecution.QUERY_ID_KEY): the query's id, not the run's.
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class RangePartition(InputPartition):
    """One Spark task: one offset range of one topic partition."""

    range: OffsetRange


class KcoreDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kcore"

    def schema(self) -> str:
        decoded = value_format(self.options)
        headers = any(key.lower() == "includeheaders" and str(value).strip().lower() == "true"
                      for key, value in self.options.items())
        return kafka_schema(headers, decoded.value_type if decoded else "binary")

    def reader(self, schema: StructType) -> DataSourceReader:
        return KcoreBatchReader(replace(source_options(self.options, streaming=False),
                                        value_format=value_format(self.options)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KcoreStreamReader(replace(source_options(self.options, streaming=True),
                                         value_format=value_format(self.options)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return KcoreBatchWriter(*_sink(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KcoreStreamWriter(*_sink(self.options, schema, False))


def _sink(options: Any, schema: StructType, overwrite: bool) -> tuple[SinkOptions, list[str]]:
    if overwrite:
        raise ValueError("a topic cannot be overwritten: write with mode 'append'")
    sink = sink_options(options)
    return sink, check_schema(schema, sink)


class _Driver:
    """The driver's client, opened on first use and not pickled."""

    options: SourceOptions
    _cluster: ClusterView | None = None

    @property
    def cluster(self) -> ClusterView:
        if self._cluster is None:
            self._cluster = ClusterView(self.options.client)
        return self._cluster

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "_cluster"}

    def _watermarks(self) -> dict[TopicPartition, tuple[int, int]]:
        cluster = self.cluster
        return cluster.watermarks(cluster.partitions(self.options.strategy))

    def _resolve(self, limit, watermarks) -> dict[TopicPartition, int]:
        by_time = None
        if limit.kind == "timestamp":
            by_time = self.cluster.offsets_for_times({key: limit.timestamp for key in watermarks})
        elif limit.kind == "timestamps":
            by_time = self.cluster.offsets_for_times(
                {key: ts for key, ts in limit.timestamps.items() if key in watermarks})
        return offsets.resolve(limit, watermarks, by_time)

    def _tasks(self, starts: dict[TopicPartition, int], ends: dict[TopicPartition, int],
               watermarks) -> list[RangePartition]:
        checked = {key: offsets.check_start(key, start, watermarks, self.options.fail_on_data_loss)
                   for key, start in starts.items() if key in watermarks}
        ranges = offsets.split(offsets.ranges(checked, ends), self.options.min_partitions)
        return [RangePartition(rng) for rng in ranges]


class KcoreBatchReader(_Driver, DataSourceReader):
    def __init__(self, options: SourceOptions):
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        try:
            watermarks = self._watermarks()
            starts = self._resolve(self.options.starting, watermarks)
            ends = self._resolve(self.options.ending, watermarks)
            return self._tasks(starts, ends, watermarks)
        finally:
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if isinstance(partition, RangePartition):  # Spark reads InputPartition(None) when none is planned
            yield from read_range(partition.range, self.options)


class KcoreStreamReader(_Driver, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Stream offsets are ``{"topic": {"partition": next offset}}``."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow's end

    def initialOffset(self) -> dict:
        watermarks = self._watermarks()
        return offsets.to_json(self._resolve(self.options.starting, watermarks))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {key: latest for key, (_, latest) in self._watermarks().items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: every partition's high watermark
        (new partitions from their earliest offset, as Spark does), capped
        by the AvailableNow target and the read limit."""
        begin = offsets.from_json(start)
        watermarks = self._watermarks()
        starts = {key: begin.get(key, earliest) for key, (earliest, _) in watermarks.items()}
        latest = {key: high for key, (_, high) in watermarks.items()}
        if self._target is not None:
            latest = {key: min(high, self._target.get(key, starts[key])) for key, high in latest.items()}
        latest = {key: max(high, starts[key]) for key, high in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = offsets.rate_limit(starts, latest, limit.max_rows)
        return offsets.to_json(latest)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, finish = offsets.from_json(start), offsets.from_json(end)
        watermarks = self._watermarks()
        offsets.check_lost(sorted(set(begin) - set(watermarks)), self.options.fail_on_data_loss)
        starts = {key: begin.get(key, watermarks[key][0]) for key in finish if key in watermarks}
        return self._tasks(starts, finish, watermarks)

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if isinstance(partition, RangePartition):  # Spark reads InputPartition(None) when none is planned
            yield from read_range(partition.range, self.options)

    def commit(self, end: dict) -> None:
        """Spark keeps the offsets in its checkpoint; nothing goes to Kafka."""

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


class _Rows:
    """A task's rows to Kafka; the commit message counts them. ``write_id``
    is drawn where the writer is made, on the driver, and pickled to every
    attempt of every task."""

    def __init__(self, options: SinkOptions, columns: list[str]):
        self.options = options
        self.columns = columns
        self.write_id = str(uuid.uuid4())

    def _write_id(self, context: TaskContext) -> str:
        return self.write_id

    def _txn_id(self, partition: int, write_id: str) -> str:
        return transactional_id(self.options.transactional_id_prefix, write_id, partition)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        txn_id = None
        context = TaskContext.get()
        if self.options.transactional:
            if context is None:
                raise RuntimeError("a transactional Kafka write must run in a Spark task")
            txn_id = self._txn_id(context.partitionId(), self._write_id(context))
        stream = task_input.worker_input()
        if stream is None and txn_id is not None:
            log.warning("PySpark's worker input stream was not found: a failure upstream of this task's "
                        "Kafka writer would commit the rows it got (transaction %s)", txn_id)
        return RowWriter(self.options, self.columns, txn_id).write(iterator, lambda: task_input.cut_short(stream))


class KcoreBatchWriter(_Rows, DataSourceWriter):
    """df.write: tasks write and commit; the driver has nothing to commit."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The job failed: fence the ids of the tasks that did not report
        success, aborting the transactions of attempts that died with one
        open (their rows would otherwise hold read_committed readers back
        until the transaction timeout)."""
        if self.options.transactional:
            fence(self.options, [self._txn_id(partition, self.write_id)
                                 for partition, message in enumerate(messages)
                                 if not isinstance(message, WriteCommit)])


class KcoreStreamWriter(_Rows, DataSourceStreamWriter):
    """writeStream: each micro-batch's tasks write and commit; the driver
    has nothing to commit. A failed micro-batch's open transactions are
    fenced by its re-run when the query restarts (the driver's abort does
    not know the query's id)."""

    def _write_id(self, context: TaskContext) -> str:
        return context.getLocalProperty(QUERY_ID_PROPERTY) or self.write_id

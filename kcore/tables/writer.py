"""One topic's table writer on one broker: reads the committed records of
the partitions this broker leads from their local logs and commits them
to the topic's table every ``kcore.table.commit.interval.ms``.

The event loop only reads the log (file slices and ``os.pread``: the
page cache, a few hundred microseconds per MiB) and keeps the cursors;
decoding records, building Arrow rows, writing Parquet and committing run
in the service's one worker thread, so the produce path waits for none of
it. Memory is bounded: a partition reads ``READ_BYTES`` at a time and stops
reading while its uncommitted rows pass ``PARTITION_PENDING_BYTES``, and
the topic commits early once its rows pass ``TOPIC_PENDING_BYTES``.

Not thread-safe: the cursors belong to the event loop; the worker thread
gets copies of what it needs.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from kcore.client.fetch import FetchedPartition, records_from
from kcore.protocol.constants import READ_COMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError
from kcore.tables.settings import METADATA_COLUMN, CatalogSettings, TopicTableSettings, topic_settings

log = logging.getLogger(__name__)

READ_BYTES = 1 << 20
# Reads of one partition in one step, at most, before the others get
# theirs: 8 MiB, so a backlog drains at tens of MB/s, not 1 MiB a poll.
READS_PER_STEP = 8
# Arrow's in-memory size is about the records' decoded size: 64 MiB per
# partition and 256 MiB per topic keep a backfill of a large log in check.
PARTITION_PENDING_BYTES = 64 << 20
TOPIC_PENDING_BYTES = 256 << 20
# How often the writer looks for new records, at most; the commit
# interval decides how often the table gets them.
POLL_S = 0.2
COMMIT_ATTEMPTS = 5
# A failing catalog or disk is retried after 1 s, then 2, 4 ... up to 30.
RETRY_BACKOFF_S = (1.0, 30.0)


@dataclass
class Cursor:
    """Where one partition stands. ``base`` is the table's offset (None:
    the table has none for it) that ``pending`` continues from, and
    ``position`` the next offset to read. A ``value_schema`` topic also
    has its dead-letter table: ``dead_base`` is that table's offset, and
    ``dead_from`` the offset below which its rows are there already (a
    crash between the two tables' commits leaves it ahead)."""

    base: int | None
    position: int
    dead_base: int | None = None
    dead_from: int = 0
    pending: list[Any] = field(default_factory=list)  # pyarrow Tables
    dead: list[Any] = field(default_factory=list)
    pending_bytes: int = 0
    pending_records: int = 0

    def add(self, rows: Any, dead: Any) -> None:
        for table, into in ((rows, self.pending), (dead, self.dead)):
            if table is not None:
                into.append(table)
                self.pending_bytes += table.nbytes
                self.pending_records += table.num_rows

    def dead_committed(self) -> None:
        self.dead_base = self.position
        self.pending_bytes -= sum(table.nbytes for table in self.dead)
        self.pending_records -= sum(table.num_rows for table in self.dead)
        self.dead = []

    def committed(self) -> None:
        self.base = self.position
        self.pending, self.dead, self.pending_bytes, self.pending_records = [], [], 0, 0


@dataclass
class TableStats:
    """One topic's figures for /metrics and ``kcore tables describe``."""

    commits: int = 0
    commit_seconds: float = 0.0
    commit_errors: int = 0
    records: int = 0
    last_commit_wall_ms: int | None = None
    committed: dict[int, int] = field(default_factory=dict)
    lag: dict[int, int] = field(default_factory=dict)


class TopicTableWriter:
    def __init__(self, topic: str, led: Callable[[], dict[int, Partition]], executor: Executor,
                 worker: Worker, stats: TableStats):
        """``led`` gives the partitions of ``topic`` this broker leads with
        tables on; ``worker`` is the service's thread-side object, whose
        calls run in ``executor``."""
        self.topic = topic
        self._led = led
        self._executor = executor
        self._worker = worker
        self.stats = stats
        self._cursors: dict[int, Cursor] = {}
        self._tables: TopicTables | None = None
        self._last_commit = 0.0

    async def run(self) -> None:
        """Until no partition of the topic is led here with tables on."""
        loop = asyncio.get_running_loop()
        self._last_commit = loop.time()
        backoff = RETRY_BACKOFF_S[0]
        while True:
            partitions = self._led()
            if not partitions:
                return
            settings = topic_settings(next(iter(partitions.values())).configs)
            try:
                await self._step(partitions, settings, loop.time())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the writer reports and retries; produce and fetch go on
                self.stats.commit_errors += 1
                log.warning("table of %s: %s; retrying in %.0fs", self.topic, exc, backoff,
                            exc_info=log.isEnabledFor(logging.DEBUG))
                self._tables = None
                self._cursors.clear()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_S[1])
                continue
            backoff = RETRY_BACKOFF_S[0]
            await asyncio.sleep(POLL_S)

    async def _step(self, partitions: dict[int, Partition], settings: TopicTableSettings, now: float) -> None:
        if self._tables is None or self._tables.settings.mode != settings.mode:
            compression = next(iter(partitions.values())).configs.get("compression.type", "producer")
            self._tables = await self._call(self._worker.tables, self.topic, settings, compression)
            self._cursors.clear()
        for index in [i for i in self._cursors if i not in partitions]:
            del self._cursors[index]  # leadership moved: the new leader resumes from the table
        await self._new_cursors(partitions)
        for index, partition in partitions.items():
            for _ in range(READS_PER_STEP):
                if not await self._read(index, partition, self._cursors[index]):
                    break
        self._update_lag(partitions)
        pending = sum(cursor.pending_bytes for cursor in self._cursors.values())
        due = now - self._last_commit >= settings.commit_interval_ms / 1000
        if any(cursor.pending_records for cursor in self._cursors.values()) and (due or pending >= TOPIC_PENDING_BYTES):
            await self._commit()
            self._last_commit = asyncio.get_running_loop().time()
            self._update_lag(partitions)

    async def _new_cursors(self, partitions: dict[int, Partition]) -> None:
        """Cursors for the partitions without one, from the tables' offsets now."""
        new = [index for index in partitions if index not in self._cursors]
        if not new:
            return
        assert self._tables is not None
        offsets, dead = await self._call(self._worker.offsets, self._tables)
        for index in new:
            start = max(offsets.get(index, 0), partitions[index].log_start_offset)
            self._cursors[index] = Cursor(offsets.get(index), start, dead.get(index), dead.get(index, 0))

    async def _read(self, index: int, partition: Partition, cursor: Cursor) -> bool:
        """One read of up to READ_BYTES; False when there was nothing to read
        (caught up, or the partition's rows fill their share)."""
        if cursor.pending_bytes >= PARTITION_PENDING_BYTES:
            return False
        if cursor.position < partition.log_start_offset:
            log.warning("table of %s-%d: offsets %d to %d were deleted from the log before the table got "
                        "them", self.topic, index, cursor.position, partition.log_start_offset - 1)
            cursor.position = partition.log_start_offset
        upper = partition.last_stable_offset
        if cursor.position >= upper:
            return False
        try:
            slices = partition.read(cursor.position, READ_BYTES, read_committed=True, min_one_message=True)
        except PartitionError as exc:
            if exc.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                return False  # truncated or moved under us: the next step reads again
            raise
        data = b"".join(os.pread(s.fd, s.size, s.position) for s in slices)
        aborted = tuple((txn.producer_id, txn.first_offset)
                        for txn in partition.log.collect_aborted_txns(cursor.position, upper))
        fetched = FetchedPartition(self.topic, index, ErrorCode.NONE, partition.high_watermark, upper,
                                   partition.log_start_offset, data, aborted)
        rows, dead, next_offset = await self._call(self._worker.rows, self._tables, fetched, cursor.position,
                                                   upper, cursor.dead_from)
        cursor.add(rows, dead)
        moved = next_offset > cursor.position
        cursor.position = max(cursor.position, next_offset)
        return moved

    async def _commit(self) -> None:
        """The dead letters first, then the table: a crash between the two
        leaves the dead-letter table ahead, and its own offsets say which
        of the records read again it holds already."""
        assert self._tables is not None
        for _ in range(COMMIT_ATTEMPTS):
            writing = {index: cursor for index, cursor in self._cursors.items() if cursor.position != cursor.base}
            if not any(cursor.pending_records for cursor in writing.values()):
                return
            started = time.monotonic()
            offsets = {index: cursor.position for index, cursor in writing.items()}
            if any(cursor.dead for cursor in writing.values()):
                result = await self._call(self._worker.commit, self._tables, True,
                                          [rows for cursor in writing.values() for rows in cursor.dead],
                                          {index: cursor.dead_base for index, cursor in writing.items()}, offsets)
                if not isinstance(result, dict):
                    await self._stale(*result)
                    continue
                for cursor in writing.values():
                    cursor.dead_committed()
            written = sum(cursor.pending_records for cursor in writing.values())
            result = await self._call(self._worker.commit, self._tables, False,
                                      [rows for cursor in writing.values() for rows in cursor.pending],
                                      {index: cursor.base for index, cursor in writing.items()}, offsets)
            if not isinstance(result, dict):
                await self._stale(*result)
                continue
            self.stats.commits += 1
            self.stats.commit_seconds += time.monotonic() - started
            self.stats.records += written
            self.stats.last_commit_wall_ms = int(time.time() * 1000)
            for cursor in writing.values():
                cursor.committed()
            return
        raise RuntimeError(f"no commit after {COMMIT_ATTEMPTS} attempts (concurrent writers)")

    async def _stale(self, partitions: set[int], current: dict[int, int]) -> None:
        """Another writer wrote these partitions: read them again from
        where the tables hold them."""
        for index in partitions:
            log.info("table of %s-%d: written by another writer up to %s; reading again from there",
                     self.topic, index, current.get(index))
            self._cursors.pop(index, None)
        await self._new_cursors(self._led())

    def _update_lag(self, partitions: dict[int, Partition]) -> None:
        self.stats.committed = {i: c.base for i, c in self._cursors.items() if c.base is not None}
        self.stats.lag = {i: max(0, p.last_stable_offset - (self._cursors[i].base or p.log_start_offset))
                          for i, p in partitions.items() if i in self._cursors}

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)


@dataclass
class TopicTables:
    """A topic's table and, in ``value_schema`` mode, its dead-letter table
    and the value schemas merged into the table so far."""

    settings: TopicTableSettings
    table: Any
    dead_letters: Any = None
    merged: set[tuple[int, tuple[int, ...]]] = field(default_factory=set)


class Worker:
    """What runs in the service's worker thread: the catalog (opened on
    first use), and the calls the writers make. One thread only: the
    SQLite catalog is not shared between threads.

    ``lookup`` gives a registered schema by id (the registry's parse, its
    references resolved) or raises LookupError; it blocks this thread
    while the event loop asks the registry."""

    def __init__(self, settings: CatalogSettings, lookup: Callable[[int], Any] | None = None):
        self.settings = settings
        self._lookup = lookup
        self._catalog: Any = None
        self._value_schemas: dict[tuple[int, tuple[int, ...]], Any] = {}

    def tables(self, topic: str, settings: TopicTableSettings, compression: str) -> TopicTables:
        from kcore.tables import catalog
        if self._catalog is None:
            self._catalog = catalog.open_catalog(self.settings)
        table = catalog.load_or_create(self._catalog, topic, settings, compression)
        dead = (catalog.load_or_create(self._catalog, topic, settings, compression, dead_letter=True)
                if settings.mode == "value_schema" else None)
        return TopicTables(settings, table, dead)

    @staticmethod
    def offsets(tables: TopicTables) -> tuple[dict[int, int], dict[int, int]]:
        """The offsets of the table and of its dead-letter table, read now."""
        from kcore.tables import catalog
        dead = catalog.refreshed_offsets(tables.dead_letters) if tables.dead_letters is not None else {}
        return catalog.refreshed_offsets(tables.table), dead

    def rows(self, tables: TopicTables, fetched: FetchedPartition, position: int, upper: int,
             dead_from: int) -> tuple[Any, Any, int]:
        """The rows of the records in ``fetched`` from ``position`` below
        ``upper`` (aborted transactions left out), the dead letters (below
        ``dead_from`` left out: the dead-letter table has them) and the
        next offset."""
        result = records_from(fetched, position, isolation_level=READ_COMMITTED)
        records = [record for record in result.records if record.offset is not None and record.offset < upper]
        next_offset = min(result.next_offset, upper)
        if not records:
            return None, None, next_offset
        if tables.settings.mode != "value_schema":
            from kcore.tables.rows import key_value_rows
            return key_value_rows(fetched.partition, records, tables.table.schema().as_arrow()), None, next_offset
        return (*self._value_rows(tables, fetched.partition, records, dead_from), next_offset)

    def _value_rows(self, tables: TopicTables, partition: int, records: list[Any],
                    dead_from: int) -> tuple[Any, Any]:
        from kcore.tables import catalog
        from kcore.tables.rows import dead_letter_rows, value_rows
        from kcore.tables.value_schema import DecodeError
        decoded, dead = [], []
        for record in records:
            try:
                key, schema = self._value_schema(record.value)
                columns = schema.decode(self._body(record.value, schema))
                if key not in tables.merged:
                    catalog.evolve(tables.table, schema.iceberg_schema())
                    tables.merged.add(key)
                decoded.append((record, columns))
            except DecodeError as exc:
                if record.offset >= dead_from:
                    dead.append((record, str(exc)))
            except ValueError as exc:  # the table's columns cannot take this schema's (union_by_name)
                if record.offset >= dead_from:
                    dead.append((record, f"the value's schema does not fit the table: {exc}"))
        rows = value_rows(partition, decoded, tables.table.schema().as_arrow()) if decoded else None
        letters = (dead_letter_rows(partition, dead, tables.dead_letters.schema().as_arrow()) if dead else None)
        return rows, letters

    def _value_schema(self, value: bytes | None) -> tuple[tuple[int, tuple[int, ...]], Any]:
        """The ValueSchema of a framed value, built once per schema id (and
        Protobuf message)."""
        from kcore.schema_registry.schema_types import PROTOBUF
        from kcore.tables.value_schema import DecodeError, ValueSchema, message_indexes_of, schema_id_of
        schema_id = schema_id_of(value)
        if self._lookup is None:
            raise DecodeError("this broker has no schema registry")
        try:
            parsed = self._lookup(schema_id)
        except LookupError as exc:
            raise DecodeError(f"schema id {schema_id}: {exc}") from None
        indexes = message_indexes_of(value) if parsed.schema_type == PROTOBUF else (0,)
        key = (schema_id, tuple(indexes))
        schema = self._value_schemas.get(key)
        if schema is None:
            schema = self._value_schemas[key] = ValueSchema(parsed, indexes)
            if METADATA_COLUMN in {column.name for column in schema.iceberg_schema().fields}:
                raise DecodeError(f"the schema has a field named {METADATA_COLUMN}, the table's own column")
        return key, schema

    @staticmethod
    def _body(value: bytes | None, schema: Any) -> bytes:
        from kcore.tables.value_schema import body_of
        return body_of(value, schema.schema_type)

    @staticmethod
    def commit(tables: TopicTables, dead_letters: bool, rows: list[Any], expected: dict[int, int | None],
               offsets: dict[int, int]) -> dict[int, int] | tuple[set[int], dict[int, int]]:
        """The offsets after the commit, or (stale partitions, the table's
        offsets) when another writer got there first."""
        import pyarrow as pa

        from kcore.tables import catalog
        from kcore.tables.rows import conform
        table = tables.dead_letters if dead_letters else tables.table
        schema = table.schema().as_arrow()
        data = pa.concat_tables([conform(part, schema) for part in rows]) if rows else schema.empty_table()
        try:
            return catalog.commit(table, data, expected, offsets)
        except catalog.StaleBase as exc:
            return exc.partitions, exc.current
        except catalog.CommitFailedException:
            return set(), catalog.refreshed_offsets(table)

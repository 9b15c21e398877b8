"""The Iceberg side of topics as tables, through pyiceberg: the catalog,
the table of a topic, the offsets a table holds, and the commit.

Imported only in the table writer's worker thread (and by ``kcore
tables``): pyiceberg and pyarrow take ~0.5 s to import, which a broker
without tables does not pay.

Offsets: every snapshot the writer makes carries ``kcore.offsets`` in its
summary, a JSON object {partition: next offset the table lacks} for every
partition written so far; a snapshot made by someone else (a compaction
job, an expiry) has none, so the offsets are those of the newest snapshot
of the current lineage that has them.

Commits are optimistic: ``commit.retry.num-retries`` is 0 on the tables
kcore creates, so a commit whose base snapshot is no longer the table's
current one fails (CommitFailedException) instead of being replayed on
top of another writer's, which could write a partition's records twice.
``commit`` first checks that the table still holds, for each partition
it writes, the offset the rows were read from (``StaleBase`` otherwise).
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, HourTransform, MonthTransform, YearTransform
from pyiceberg.types import (
    BinaryType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from kcore.tables.settings import METADATA_COLUMN, NAMESPACE, CatalogSettings, TopicTableSettings

OFFSETS_KEY = "kcore.offsets"
DEAD_LETTER_SUFFIX = "~dlq"
PARTITION_FIELD_ID = 1000
TRANSFORMS = {"day": DayTransform, "hour": HourTransform, "month": MonthTransform, "year": YearTransform}
# A topic's compression.type as Parquet's codec; "producer" (the topic keeps
# whatever each batch came with) becomes zstd, pyiceberg's default.
PARQUET_CODECS = {"gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd",
                  "uncompressed": "uncompressed", "producer": "zstd"}

__all__ = ["CommitFailedException", "NoSuchTableError", "StaleBase", "TableLayoutError", "commit", "committed_offsets",
           "evolve", "load_or_create", "open_catalog", "table_name"]


class StaleBase(Exception):
    """The table holds other offsets than the rows were read from, for
    ``partitions``: another writer (an old or a new leader) wrote them."""

    def __init__(self, partitions: set[int], current: dict[int, int]):
        super().__init__(f"partitions {sorted(partitions)} were written by another writer")
        self.partitions = partitions
        self.current = current


def open_catalog(settings: CatalogSettings) -> Catalog:
    """An http(s) URI is a REST catalog; any other a SQL catalog at that
    SQLAlchemy URL (sqlite:///path shared by the brokers of one machine,
    postgresql://... with its driver installed); none, the SQLite file
    under the first log dir."""
    if settings.uri and settings.uri.startswith(("http://", "https://")):
        properties = {"type": "rest", "uri": settings.uri}
        if settings.warehouse:
            properties["warehouse"] = settings.warehouse
        return load_catalog("kcore", **properties)
    settings.tables_dir.mkdir(parents=True, exist_ok=True)
    return load_catalog("kcore", type="sql", uri=settings.uri or f"sqlite:///{settings.sqlite_path}",
                        warehouse=settings.warehouse_location)


class TableLayoutError(Exception):
    """The table exists with another mode's columns."""


def table_name(topic: str, dead_letter: bool = False) -> tuple[str, str]:
    """``kcore.<topic>`` (``kcore.<topic>~dlq``: its dead letters), as a
    tuple: a topic name may hold dots."""
    return (NAMESPACE, topic + DEAD_LETTER_SUFFIX if dead_letter else topic)


def _headers(first_id: int) -> ListType:
    return ListType(element_id=first_id, element_required=True, element=StructType(
        NestedField(first_id + 1, "key", StringType(), required=True),
        NestedField(first_id + 2, "value", BinaryType(), required=False)))


def key_value_schema(dead_letter: bool = False) -> Schema:
    """``key_value`` rows; with ``dead_letter``, the dead-letter table's
    (the same, and why the value did not decode)."""
    return Schema(
        NestedField(1, "partition", IntegerType(), required=True),
        NestedField(2, "offset", LongType(), required=True),
        NestedField(3, "timestamp", TimestamptzType(), required=False),
        NestedField(4, "key", BinaryType(), required=False),
        NestedField(5, "value", BinaryType(), required=False),
        NestedField(6, "headers", _headers(7), required=True),
        *([NestedField(10, "reason", StringType(), required=True)] if dead_letter else []),
    )


def value_schema_schema() -> Schema:
    """A ``value_schema`` table before any value's columns: the record's
    metadata in the ``kcore`` struct (the value's schema adds the rest)."""
    return Schema(NestedField(1, METADATA_COLUMN, StructType(
        NestedField(2, "partition", IntegerType(), required=True),
        NestedField(3, "offset", LongType(), required=True),
        NestedField(4, "timestamp", TimestamptzType(), required=False),
        NestedField(5, "key", BinaryType(), required=False),
        NestedField(6, "headers", _headers(7), required=True)), required=True))


def partition_spec(partition_by: str, timestamp_id: int) -> PartitionSpec:
    if partition_by == "none":
        return UNPARTITIONED_PARTITION_SPEC
    return PartitionSpec(PartitionField(source_id=timestamp_id, field_id=PARTITION_FIELD_ID,
                                        transform=TRANSFORMS[partition_by](), name=f"timestamp_{partition_by}"))


def load_or_create(catalog: Catalog, topic: str, settings: TopicTableSettings, compression: str,
                   dead_letter: bool = False) -> Table:
    """The topic's table (or its dead-letter table), created if missing.
    Brokers sharing a catalog race to create the namespace and the table;
    the loser's create fails (pyiceberg's SQL catalog: an IntegrityError
    from its unique keys) and it takes what the winner made.
    TableLayoutError when the table was made by another mode."""
    value_schema = settings.mode == "value_schema" and not dead_letter
    schema = value_schema_schema() if value_schema else key_value_schema(dead_letter)
    try:
        catalog.create_namespace_if_not_exists(NAMESPACE)
    except Exception:
        if not catalog.namespace_exists(NAMESPACE):
            raise
    name = table_name(topic, dead_letter)
    try:
        table = catalog.create_table_if_not_exists(
            name, schema=schema, partition_spec=partition_spec(settings.partition_by, 4 if value_schema else 3),
            properties={"format-version": "2", "commit.retry.num-retries": "0",
                        "write.parquet.compression-codec": PARQUET_CODECS.get(compression, "zstd")})
    except Exception:
        if not catalog.table_exists(name):
            raise
        table = catalog.load_table(name)
    names = {field.name for field in table.schema().fields}
    if (METADATA_COLUMN in names) != value_schema or (not value_schema and "offset" not in names):
        raise TableLayoutError(f"table {'.'.join(name)} was made for another kcore.table.mode; drop or rename "
                               f"it to write the topic in {settings.mode} mode")
    return table


def evolve(table: Table, schema: Schema) -> None:
    """Add the columns of ``schema`` that the table lacks (Iceberg schema
    evolution by name; a type it cannot widen to raises)."""
    with table.update_schema() as update:
        update.union_by_name(schema)


def committed_offsets(table: Table) -> dict[int, int]:
    """{partition: next offset} of the newest snapshot of the current
    lineage that has them; {} for a table kcore never committed to."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        text = snapshot.summary.additional_properties.get(OFFSETS_KEY) if snapshot.summary else None
        if text is not None:
            return {int(partition): int(offset) for partition, offset in json.loads(text).items()}
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return {}


def refreshed_offsets(table: Table) -> dict[int, int]:
    table.refresh()
    return committed_offsets(table)


def commit(table: Table, rows: pa.Table, expected: Mapping[int, int | None],
           offsets: Mapping[int, int]) -> dict[int, int]:
    """Append ``rows`` with the offsets moved to ``offsets``, if the table
    still holds ``expected`` for those partitions (None: none yet);
    the offsets of every partition after the commit."""
    current = refreshed_offsets(table)
    stale = {partition for partition, base in expected.items() if current.get(partition) != base}
    if stale:
        raise StaleBase(stale, current)
    merged = {**current, **offsets}
    table.append(rows, snapshot_properties={OFFSETS_KEY: json.dumps({str(p): o for p, o in sorted(merged.items())})})
    return merged

"""Records as Arrow rows of a topic's tables.

``key_value`` tables, and the dead-letter table of a ``value_schema``
one, hold one row per record with its topic partition and offset
(together the row's identity), the record timestamp (UTC, microseconds as
Iceberg keeps them; null for a record without one, timestamp -1), the key
and value bytes and the headers as a list of (key, value); the dead-letter
table adds why the value did not decode. A ``value_schema`` table keeps
the same record metadata (the value aside) in one struct column,
``kcore``, beside the columns of the value's schema.

Runs in the table writer's worker thread: pyarrow builds the columns.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kcore.protocol.records import Record
from kcore.tables.settings import METADATA_COLUMN


def metadata(partition: int, record: Record) -> dict[str, Any]:
    """A record's partition, offset, timestamp, key and headers."""
    timestamp = record.timestamp
    return {"partition": partition, "offset": record.offset,
            "timestamp": timestamp * 1000 if timestamp is not None and timestamp >= 0 else None,
            "key": record.key,
            "headers": [{"key": name, "value": value} for name, value in record.headers]}


def key_value_rows(partition: int, records: Sequence[Record], schema: pa.Schema) -> pa.Table:
    """The rows of ``records`` (decoded, with absolute offsets) in ``schema``
    (the table's, as Arrow: field ids and large binary types included)."""
    return pa.Table.from_pylist([{**metadata(partition, record), "value": record.value} for record in records],
                                schema=schema)


def dead_letter_rows(partition: int, records: Sequence[tuple[Record, str]], schema: pa.Schema) -> pa.Table:
    """Records whose value did not decode, each with the reason."""
    return pa.Table.from_pylist([{**metadata(partition, record), "value": record.value, "reason": reason}
                                 for record, reason in records], schema=schema)


def value_rows(partition: int, records: Sequence[tuple[Record, dict[str, Any]]], schema: pa.Schema) -> pa.Table:
    """Records with their decoded values (column name -> value): the
    ``kcore`` struct and the value's columns; columns of the table that a
    value's schema lacks are null."""
    return pa.Table.from_pylist([{METADATA_COLUMN: metadata(partition, record), **columns}
                                 for record, columns in records], schema=schema)


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in ``schema``, the table's current one: rows read before a
    value's schema added columns get them as nulls."""
    columns = [rows.column(field.name).cast(field.type) if field.name in rows.column_names
               else pa.nulls(rows.num_rows, field.type) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema)

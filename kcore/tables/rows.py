"""Records as Arrow rows of a ``key_value`` table.

One row per record: the topic partition and offset (together the row's
identity), the record timestamp (UTC, microseconds as Iceberg keeps
them; null for a record without one, timestamp -1), the key and value
bytes and the headers as a list of (key, value). Runs in the table
writer's worker thread: pyarrow builds the columns.
"""
from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from kcore.protocol.records import Record


def key_value_rows(partition: int, records: Sequence[Record], schema: pa.Schema) -> pa.Table:
    """The rows of ``records`` (decoded, with absolute offsets) in ``schema``
    (the table's, as Arrow: field ids and large binary types included)."""
    return pa.Table.from_pydict({
        "partition": [partition] * len(records),
        "offset": [record.offset for record in records],
        "timestamp": [record.timestamp * 1000 if record.timestamp is not None and record.timestamp >= 0 else None
                      for record in records],
        "key": [record.key for record in records],
        "value": [record.value for record in records],
        "headers": [[{"key": name, "value": value} for name, value in record.headers] for record in records],
    }, schema=schema)

"""Reading a broker's topic tables back with pyiceberg, as any Iceberg
reader would: the broker's default SQL catalog (SQLite) under its first
log dir (catalog name "kcore": a SQL catalog keeps each catalog's tables
apart by name), the table ``kcore.<topic>``, the offsets each snapshot
records."""
from __future__ import annotations

import json
import time
from pathlib import Path

from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError

WAIT_S = 60.0


def catalog_of(data_dir: Path) -> Catalog:
    tables = Path(data_dir) / "__tables"
    return load_catalog("kcore", type="sql", uri=f"sqlite:///{tables / 'catalog.db'}",
                        warehouse=(tables / "warehouse").resolve().as_uri())


def table_offsets(catalog: Catalog, topic: str) -> dict[int, int]:
    """{partition: next offset} of the current snapshot; {} before any."""
    try:
        table = catalog.load_table(("kcore", topic))
    except NoSuchTableError:
        return {}
    snapshot = table.current_snapshot()
    if snapshot is None:
        return {}
    text = snapshot.summary.additional_properties.get("kcore.offsets", "{}")
    return {int(partition): offset for partition, offset in json.loads(text).items()}


def wait_for_offsets(data_dir: Path, topic: str, ends: dict[int, int], wait_s: float = WAIT_S) -> dict[int, int]:
    """Until the table holds every partition up to ``ends`` (bounded)."""
    deadline = time.monotonic() + wait_s
    offsets: dict[int, int] = {}
    while time.monotonic() < deadline:
        if Path(data_dir, "__tables", "catalog.db").exists():
            offsets = table_offsets(catalog_of(data_dir), topic)
            if all(offsets.get(p, 0) >= end for p, end in ends.items()):
                return offsets
        time.sleep(0.2)
    raise AssertionError(f"table of {topic} at {offsets} after {wait_s:g}s, log ends {ends}")


def table_rows(data_dir: Path, topic: str) -> list[dict]:
    """Every row, ordered by partition and offset."""
    rows = catalog_of(data_dir).load_table(("kcore", topic)).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: (row["partition"], row["offset"]))

"""What a topic and the broker ask of the table writer, read from the
topic's effective configs (kcore/topic_config.py ``kcore.table.*``) and
the broker's (``kcore.table.catalog.*``)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcore.config import BrokerConfig

# The SQLite catalog and its warehouse, under the first log dir; the name
# is no partition directory's (topic-N), so the log manager passes it by.
TABLES_DIR = "__tables"
CATALOG_FILE = "catalog.db"
WAREHOUSE_DIR = "warehouse"
NAMESPACE = "kcore"
# A value_schema table's struct of record metadata (partition, offset, ...).
METADATA_COLUMN = "kcore"


@dataclass(frozen=True)
class TopicTableSettings:
    mode: str
    commit_interval_ms: int
    partition_by: str

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


def topic_settings(configs: Mapping[str, Any]) -> TopicTableSettings:
    return TopicTableSettings(configs.get("kcore.table.mode", "off"),
                              int(configs.get("kcore.table.commit.interval.ms", 60_000)),
                              configs.get("kcore.table.partition.by", "day"))


@dataclass(frozen=True)
class CatalogSettings:
    """A REST catalog when ``uri`` is set, else SQLite under ``tables_dir``."""

    uri: str | None
    warehouse: str | None
    tables_dir: Path

    @classmethod
    def from_broker(cls, configs: BrokerConfig, first_log_dir: Path) -> CatalogSettings:
        return cls(configs["kcore.table.catalog.uri"], configs["kcore.table.catalog.warehouse"],
                   first_log_dir / TABLES_DIR)

    @property
    def sqlite_path(self) -> Path:
        return self.tables_dir / CATALOG_FILE

    @property
    def warehouse_location(self) -> str:
        return self.warehouse or (self.tables_dir / WAREHOUSE_DIR).resolve().as_uri()

"""Reading a broker's topic tables back with pyiceberg, as any Iceberg
reader would: the broker's default SQL catalog (SQLite) under its first
log dir (catalog name "kcore": a SQL catalog keeps each catalog's tables
apart by name), the table ``kcore.<topic>``, the offsets each snapshot
records."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError
from sqlalchemy.exc import OperationalError

WAIT_S = 60.0
PARTITIONS = 3
SEND_INTERVAL_S = 0.001
PRODUCE_S = 60.0


def catalog_of(data_dir: Path) -> Catalog:
    tables = Path(data_dir) / "__tables"
    return load_catalog("kcore", type="sql", uri=f"sqlite:///{tables / 'catalog.db'}",
                        warehouse=(tables / "warehouse").resolve().as_uri())


# A broker's data dir (its default SQLite catalog), or what opens the
# catalog a cluster's brokers share (kcore.table.catalog.uri).
Where = Path | Callable[[], Catalog]


def shared_catalog(uri: str, warehouse: str) -> Callable[[], Catalog]:
    return lambda: load_catalog("kcore", type="sql", uri=uri, warehouse=warehouse)


def _open(where: Where) -> Catalog | None:
    if callable(where):
        return where()
    if not Path(where, "__tables", "catalog.db").exists():
        return None
    try:
        return catalog_of(where)
    except OperationalError:  # the broker is creating the catalog's tables this moment
        return None


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


def wait_for_offsets(where: Where, topic: str, ends: dict[int, int], wait_s: float = WAIT_S) -> dict[int, int]:
    """Until the table holds every partition up to ``ends`` (bounded)."""
    deadline = time.monotonic() + wait_s
    offsets: dict[int, int] = {}
    while time.monotonic() < deadline:
        catalog = _open(where)
        if catalog is not None:
            offsets = table_offsets(catalog, topic)
            if all(offsets.get(p, 0) >= end for p, end in ends.items()):
                return offsets
        time.sleep(0.2)
    raise AssertionError(f"table of {topic} at {offsets} after {wait_s:g}s, log ends {ends}")


def table_rows(where: Where, topic: str) -> list[dict]:
    """Every row, ordered by partition and offset."""
    catalog = _open(where)
    assert catalog is not None, f"no catalog at {where}"
    rows = catalog.load_table(("kcore", topic)).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: (row["partition"], row["offset"]))


class Producing:
    """An idempotent producer thread sending ``n-<i>`` round robin until
    stopped (bounded), keeping what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.acknowledged: set[bytes] = set()
        self.errors: list[str] = []
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "linger.ms": 5, "message.timeout.ms": 60_000})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acknowledged.add(message.value())
        else:
            self.errors.append(str(error))

    def _run(self) -> None:
        deadline = time.monotonic() + PRODUCE_S
        sequence = 0
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                self._producer.produce(self.topic, f"n-{sequence}".encode(), partition=sequence % PARTITIONS,
                                       on_delivery=self._delivered)
                sequence += 1
            except BufferError:
                pass
            self._producer.poll(SEND_INTERVAL_S)

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(60)


def log_ends(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def check_exactly_once(where: Where, bootstrap: str, topic: str, acknowledged: set[bytes]) -> None:
    """The table holds every offset of the log once (the log's end offsets
    read now), and every acknowledged value among them."""
    ends = log_ends(bootstrap, topic)
    wait_for_offsets(where, topic, ends)
    rows = table_rows(where, topic)
    for partition in range(PARTITIONS):
        offsets = [row["offset"] for row in rows if row["partition"] == partition]
        assert offsets == list(range(ends[partition])), \
            f"partition {partition}: {len(offsets)} rows for {ends[partition]} offsets, " \
            f"{len(offsets) - len(set(offsets))} doubled"
    values = {row["value"] for row in rows}
    assert acknowledged <= values, f"{len(acknowledged - values)} acknowledged records not in the table"

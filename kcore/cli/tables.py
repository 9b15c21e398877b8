"""`kcore tables describe TOPIC`: a topic's Iceberg table (docs/tables.md)
against its log: the current snapshot, and per partition the offset the
table holds, the log's last stable offset and the lag between them.

    kcore tables describe TOPIC [--log-dir DIR | --catalog-uri URI] [--bootstrap-server H:P]

The catalog is the broker's: the SQLite one under ``--log-dir`` (default
./data, as ``kcore broker``; a node of processes keeps it under the node's
own log dir), or the REST catalog at ``--catalog-uri``. The log's offsets
come from the brokers (ListOffsets, read_committed). "seconds behind" is
the age of the table's current snapshot while the table lags, else 0.
Exit status: 0, 1 when the topic has no table or a broker cannot be
reached, 2 for bad usage.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from kcore.cli.client_commands import EXIT_ERROR, _client, _run, connection_arguments
from kcore.client import LATEST_TIMESTAMP, TopicPartition
from kcore.client.fetch import list_offsets
from kcore.protocol.constants import READ_COMMITTED
from kcore.tables.settings import TABLES_DIR, CatalogSettings


def add_parser(commands) -> None:
    parser = commands.add_parser("tables", help="topics written as Iceberg tables")
    actions = parser.add_subparsers(dest="action", required=True)
    describe = actions.add_parser("describe", parents=[connection_arguments()],
                                  help="a topic's table: snapshot, offsets, lag behind the log")
    describe.add_argument("topic")
    where = describe.add_mutually_exclusive_group()
    where.add_argument("--log-dir", type=Path, default=Path("./data"),
                       help="the broker's first log dir, which holds the SQLite catalog (default ./data)")
    where.add_argument("--catalog-uri", help="the REST catalog (kcore.table.catalog.uri)")
    describe.add_argument("--warehouse", help="the catalog's warehouse (kcore.table.catalog.warehouse)")
    describe.set_defaults(run=run)


def run(args) -> int:
    try:
        from kcore.tables import catalog
    except ImportError as exc:
        print(f"Error: topics as tables need the tables extra (pip install 'kcore[tables]'): {exc}",
              file=sys.stderr)
        return EXIT_ERROR
    settings = CatalogSettings(args.catalog_uri, args.warehouse, args.log_dir / TABLES_DIR)
    if not settings.uri and not settings.sqlite_path.exists():
        print(f"Error: no table catalog at {settings.sqlite_path}", file=sys.stderr)
        return EXIT_ERROR
    try:
        table = catalog.open_catalog(settings).load_table(catalog.table_name(args.topic))
    except catalog.NoSuchTableError:
        print(f"Error: topic {args.topic} has no table (kcore.table.mode is off, or nothing was written yet)",
              file=sys.stderr)
        return EXIT_ERROR
    offsets = catalog.committed_offsets(table)
    snapshot = table.current_snapshot()
    print(f"Table: kcore.{args.topic}  location: {table.location()}")
    if snapshot is None:
        print("Snapshot: none")
    else:
        records = snapshot.summary.additional_properties.get("total-records", "?") if snapshot.summary else "?"
        print(f"Snapshot: {snapshot.snapshot_id}  committed at "
              f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(snapshot.timestamp_ms / 1000))} UTC  "
              f"records: {records}")
    return _run(_lag(args, offsets, snapshot.timestamp_ms if snapshot is not None else None))


async def _lag(args, offsets: dict[int, int], snapshot_ms: int | None) -> int:
    async with _client(args) as client:
        metadata = (await client.refresh_metadata([args.topic])).topics.get(args.topic)
        if metadata is None:
            print(f"Error: topic {args.topic} is not in the cluster", file=sys.stderr)
            return EXIT_ERROR
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for index, partition in metadata.partitions.items():
            by_leader.setdefault(partition.leader_id, {})[TopicPartition(args.topic, index)] = LATEST_TIMESTAMP
        ends: dict[int, int] = {}
        for leader, requested in by_leader.items():
            listed = await list_offsets(await client.connection(leader), requested, isolation_level=READ_COMMITTED)
            ends.update({tp.partition: entry.offset for tp, entry in listed.items()})
    print(f"{'PARTITION':<10} {'TABLE-OFFSET':>13} {'LOG-STABLE-OFFSET':>18} {'LAG':>10} {'SECONDS-BEHIND':>15}")
    now_ms = time.time() * 1000
    for index in sorted(ends):
        lag = max(0, ends[index] - offsets.get(index, 0))
        behind = (now_ms - snapshot_ms) / 1000 if lag and snapshot_ms is not None else 0.0
        print(f"{index:<10} {offsets.get(index, 0):>13} {ends[index]:>18} {lag:>10} {behind:>15.1f}")
    return 0

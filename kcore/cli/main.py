"""`kcore` command line: broker, topics, produce, consume, groups, share-groups, transactions,
users, schemas, acls, quotas, configs, reassign-partitions, delete-records, log-dirs,
tables, status, dump-log, bench."""
from __future__ import annotations

import argparse
import sys

from kcore.cli import (
    acls,
    bench,
    client_commands,
    configs,
    delete_records,
    dump_log,
    groups,
    log_dirs,
    quotas,
    reassign,
    schemas,
    share_groups,
    status,
    tables,
    transactions,
    users,
)
from kcore.cli import broker as broker_cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcore", description="A Kafka-compatible commit log.")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in _command_modules():
        before = set(commands.choices)
        module.add_parser(commands)
        for name in set(commands.choices) - before:
            if commands.choices[name].get_default("run") is None:
                commands.choices[name].set_defaults(run=module.run)
    return parser


def _command_modules() -> list:
    return [broker_cmd, client_commands, groups, share_groups, transactions, users, schemas, acls, quotas, configs,
            reassign, delete_records, log_dirs, tables, status, dump_log, bench]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())

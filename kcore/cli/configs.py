"""`kcore configs`: dynamic broker configs, like kafka-configs.sh
--entity-type brokers.

    kcore configs --entity-type brokers --entity-name 1 --alter \\
        --add-config leader.replication.throttled.rate=1000000,follower.replication.throttled.rate=1000000
    kcore configs --entity-type brokers --entity-default --alter --delete-config leader.replication.throttled.rate
    kcore configs --entity-type brokers --entity-name 1 --describe [--all]

--entity-name names one broker (its own values), --entity-default every
broker (the cluster default). --describe prints the dynamic values, as
Kafka's tool does; --all every config with its source. The dynamic keys
are kcore.dynamic_config.DYNAMIC_KEYS; another key kcore defines is
refused by the broker (INVALID_CONFIG), and a name it does not define is
kept as written. Broker errors print Kafka's error name and exit 1.
"""
from __future__ import annotations

import sys

from kcore.cli.client_commands import EXIT_USAGE, _client, _run, connection_arguments
from kcore.client import Admin
from kcore.client.admin import AlterConfigOp
from kcore.protocol.constants import ConfigResourceType, ConfigSource

DYNAMIC_SOURCES = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def add_parser(commands) -> None:
    parser = commands.add_parser("configs", parents=[connection_arguments()],
                                 help="dynamic broker configs (like kafka-configs --entity-type brokers)")
    parser.add_argument("--entity-type", required=True, choices=["brokers"])
    entity = parser.add_mutually_exclusive_group(required=True)
    entity.add_argument("--entity-name", metavar="BROKER_ID")
    entity.add_argument("--entity-default", action="store_true", help="the cluster-wide default")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    parser.add_argument("--add-config", default="", metavar="KEY=VALUE,...")
    parser.add_argument("--delete-config", default="", metavar="KEY,...")
    parser.add_argument("--all", action="store_true", help="with --describe: every config")
    parser.set_defaults(run=run)


def run(args) -> int:
    name = "" if args.entity_default else args.entity_name
    if args.describe:
        return _run(_describe(args, name))
    try:
        operations = parse_operations(args.add_config, args.delete_config)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _run(_alter(args, name, operations))


def parse_operations(add: str, delete: str) -> list[tuple[str, AlterConfigOp, str | None]]:
    operations: list[tuple[str, AlterConfigOp, str | None]] = []
    for item in filter(None, (part.strip() for part in add.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--add-config {item!r} is not KEY=VALUE")
        operations.append((key.strip(), AlterConfigOp.SET, value.strip()))
    operations += [(key.strip(), AlterConfigOp.DELETE, None) for key in delete.split(",") if key.strip()]
    if not operations:
        raise ValueError("--alter needs --add-config or --delete-config")
    return operations


def _label(name: str) -> str:
    return "the default broker" if name == "" else f"broker {name}"


async def _alter(args, name: str, operations) -> int:
    async with _client(args) as client:
        await Admin(client).incremental_alter_configs(ConfigResourceType.BROKER, name, operations)
    print(f"Completed updating config for {_label(name)}.")
    return 0


async def _describe(args, name: str) -> int:
    async with _client(args) as client:
        found = await Admin(client).describe_configs(ConfigResourceType.BROKER, [name])
    entries = found.get(name, [])
    if not args.all:
        entries = [entry for entry in entries if entry.source in DYNAMIC_SOURCES]
    print(f"{'All' if args.all else 'Dynamic'} configs for {_label(name)} are:")
    for entry in entries:
        value = "<sensitive>" if entry.is_sensitive else entry.value
        print(f"  {entry.name}={value} source={entry.source.name} read_only={str(entry.read_only).lower()}")
    return 0

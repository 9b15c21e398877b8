"""`kcore quotas`: client quotas per user and client id, like
kafka-configs.sh --entity-type users/clients.

    kcore quotas alter --entity-type users --entity-name alice \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    kcore quotas alter --entity-type users --entity-name alice --entity-type clients \\
        --entity-default --delete-config request_percentage
    kcore quotas describe [--entity-type clients [--entity-name app | --entity-default]]

Each --entity-type is followed by its --entity-name or --entity-default
(<default>: the quota of every user or client id without one of its own).
Quotas: producer_byte_rate, consumer_byte_rate (bytes per second) and
request_percentage. Broker errors print Kafka's error name and exit 1.
"""
from __future__ import annotations

import argparse
import sys

from kcore.cli.client_commands import EXIT_ERROR, _client, _run, connection_arguments
from kcore.client.quotas import QuotaAdmin
from kcore.security.quotas import CLIENT_ID, USER, QuotaEntity

ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}


class _Entity(argparse.Action):
    """--entity-type / --entity-name / --entity-default in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        items = list(getattr(namespace, "entity", None) or [])
        items.append((self.dest, values))
        namespace.entity = items


def add_parser(commands) -> None:
    common = connection_arguments()
    common.add_argument("--entity-type", dest="type", action=_Entity, choices=sorted(ENTITY_TYPES))
    common.add_argument("--entity-name", dest="name", action=_Entity)
    common.add_argument("--entity-default", dest="default", action=_Entity, nargs=0)
    parser = commands.add_parser("quotas", help="client quotas per user and client id "
                                                "(like kafka-configs --entity-type users/clients)")
    parser.set_defaults(run=lambda args: parser.print_help() or 2, entity=[])
    actions = parser.add_subparsers(dest="action", required=True)
    alter = actions.add_parser("alter", parents=[common], help="add or delete quotas")
    alter.add_argument("--add-config", default="", metavar="KEY=VALUE,...")
    alter.add_argument("--delete-config", default="", metavar="KEY,...")
    alter.set_defaults(run=run_alter)
    actions.add_parser("describe", parents=[common],
                       help="quotas of the entities named").set_defaults(run=run_describe)


def _components(items) -> list[tuple[str, str | None]]:
    """[(entity type, name or None for <default>)] from the ordered flags."""
    components: list[tuple[str, str | None]] = []
    kind = None
    for flag, value in items:
        if flag == "type":
            if kind is not None:
                raise ValueError(f"--entity-type {kind} needs --entity-name or --entity-default")
            kind = ENTITY_TYPES[value]
        elif kind is None:
            raise ValueError("--entity-name and --entity-default follow an --entity-type")
        else:
            components.append((kind, value if flag == "name" else None))
            kind = None
    if kind is not None:
        components.append((kind, "*"))  # a type alone: every entity of that type
    return components


def _changes(args) -> dict[str, float | None]:
    changes: dict[str, float | None] = {}
    for item in filter(None, (part.strip() for part in args.add_config.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--add-config {item!r}: expected key=value")
        try:
            changes[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--add-config {item!r}: {value!r} is not a number") from None
    for key in filter(None, (part.strip() for part in args.delete_config.split(","))):
        changes[key] = None
    return changes


def run_alter(args) -> int:
    try:
        components = _components(args.entity)
        changes = _changes(args)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not components or any(name == "*" for _, name in components) or not changes:
        print("Error: alter needs --entity-type with --entity-name or --entity-default, and "
              "--add-config or --delete-config", file=sys.stderr)
        return EXIT_ERROR
    entity = QuotaEntity.of(components)

    async def go() -> int:
        async with _client(args) as client:
            await QuotaAdmin(client).alter_quotas(entity, changes)
        print(f"Completed updating quotas of {entity.describe()}.")
        return 0
    return _run(go())


def run_describe(args) -> int:
    try:
        components = _components(args.entity)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    exact = [(kind, name) for kind, name in components if name != "*"]
    kinds = {kind for kind, _ in components}

    async def go() -> int:
        async with _client(args) as client:
            found = await QuotaAdmin(client).describe_quotas(exact)
        for entity, values in found:
            if not kinds <= {kind for kind, _ in entity.parts}:
                continue
            configs = ",".join(f"{key}={_number(value)}" for key, value in sorted(values.items()))
            print(f"Quota configs for {entity.describe()} are {configs}")
        return 0
    return _run(go())


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)

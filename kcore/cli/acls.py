"""`kcore acls`: add, list and remove ACLs, like kafka-acls.sh.

    kcore acls add --allow-principal User:alice --operation Read --operation Describe --topic t
    kcore acls add --deny-principal User:bob --operation Write --topic logs- \\
        --resource-pattern-type prefixed --deny-host 10.0.0.5
    kcore acls list [--topic t] [--resource-pattern-type match] [--principal User:alice]
    kcore acls remove --allow-principal User:alice --operation Read --topic t

add makes one ACL per principal x host x operation x resource (host *
unless --allow-host / --deny-host). list and remove take the same
resources as filters: without --operation, --principal or a host they
match any; remove without a resource is refused (it would remove
everything), as kafka-acls does. --resource-pattern-type is literal by
default (match: the ACLs that apply to the named resource, any: every
pattern). Broker errors print Kafka's error name and exit 1.
"""
from __future__ import annotations

import argparse
import sys

from kcore.cli.client_commands import EXIT_ERROR, _client, _run, connection_arguments
from kcore.client.acls import AclAdmin
from kcore.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

OPERATIONS = {op.name.replace("_", "").lower(): op for op in AclOperation
              if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}
PATTERN_TYPES = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED,
                 "match": PatternType.MATCH, "any": PatternType.ANY}


def _operation(text: str) -> AclOperation:
    op = OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if op is None:
        raise argparse.ArgumentTypeError(
            f"unknown operation {text!r}; one of Read, Write, Create, Delete, Alter, Describe, "
            "ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All")
    return op


def add_parser(commands) -> None:
    common = connection_arguments()
    common.add_argument("--topic", action="append", default=[])
    common.add_argument("--group", action="append", default=[])
    common.add_argument("--transactional-id", action="append", default=[])
    common.add_argument("--cluster", action="store_true", help="the cluster resource")
    common.add_argument("--resource-pattern-type", choices=sorted(PATTERN_TYPES), default=None)
    common.add_argument("--operation", action="append", type=_operation, default=[])
    common.add_argument("--allow-principal", action="append", default=[])
    common.add_argument("--deny-principal", action="append", default=[])
    common.add_argument("--allow-host", action="append", default=[])
    common.add_argument("--deny-host", action="append", default=[])
    parser = commands.add_parser("acls", help="add, list and remove ACLs (like kafka-acls)")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("add", parents=[common], help="add ACLs").set_defaults(run=run_add)
    listing = actions.add_parser("list", parents=[common], help="list ACLs")
    listing.add_argument("--principal", default=None, help="only the ACLs of this principal")
    listing.set_defaults(run=run_list)
    actions.add_parser("remove", parents=[common], help="remove ACLs").set_defaults(run=run_remove)


def _resources(args) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, name) for name in args.topic]
    resources += [(ResourceType.GROUP, name) for name in args.group]
    resources += [(ResourceType.TRANSACTIONAL_ID, name) for name in args.transactional_id]
    if args.cluster:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return resources


def _entries(args, default_host: str | None = "*") -> list[tuple[AclPermissionType, str, str]]:
    """(permission, principal, host) of every ACL the flags name; a filter
    without a host matches any (default_host None)."""
    entries = []
    for permission, principals, hosts in (
            (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
            (AclPermissionType.DENY, args.deny_principal, args.deny_host)):
        entries += [(permission, principal, host)
                    for principal in principals for host in (hosts or [default_host])]
    return entries


def run_add(args) -> int:
    resources, entries = _resources(args), _entries(args)
    if not resources or not entries or not args.operation:
        print("Error: add needs a resource (--topic, --group, --transactional-id, --cluster), "
              "--allow-principal or --deny-principal, and --operation", file=sys.stderr)
        return EXIT_ERROR
    pattern = PATTERN_TYPES[args.resource_pattern_type or "literal"]
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        print("Error: an ACL's --resource-pattern-type is literal or prefixed", file=sys.stderr)
        return EXIT_ERROR
    bindings = [AclBinding(kind, name, pattern, principal, host, op, permission)
                for kind, name in resources for permission, principal, host in entries
                for op in args.operation]

    async def go() -> int:
        async with _client(args) as client:
            await AclAdmin(client).create_acls(bindings)
        print(f"Added {len(bindings)} ACLs:")
        _print_acls(bindings)
        return 0
    return _run(go())


def _filters(args, principal: str | None) -> list[AclFilter]:
    pattern = PATTERN_TYPES[args.resource_pattern_type or "literal"]
    resources: list[tuple[ResourceType, str | None]] = list(_resources(args))
    if not resources:
        resources, pattern = [(ResourceType.ANY, None)], PATTERN_TYPES[
            args.resource_pattern_type or "any"]
    entries: list[tuple[AclPermissionType, str | None, str | None]] = list(
        _entries(args, default_host=None))
    if not entries:
        entries = [(AclPermissionType.ANY, principal, None)]
    operations = args.operation or [AclOperation.ANY]
    return [AclFilter(kind, name, pattern, who, host, op, permission)
            for kind, name in resources for permission, who, host in entries for op in operations]


def run_list(args) -> int:
    filters = _filters(args, args.principal)

    async def go() -> int:
        async with _client(args) as client:
            admin = AclAdmin(client)
            found: set[AclBinding] = set()
            for acl_filter in filters:
                found.update(await admin.describe_acls(acl_filter))
        _print_acls(sorted(found))
        return 0
    return _run(go())


def run_remove(args) -> int:
    if not _resources(args):
        print("Error: remove needs a resource (--topic, --group, --transactional-id, --cluster)",
              file=sys.stderr)
        return EXIT_ERROR
    filters = _filters(args, None)

    async def go() -> int:
        async with _client(args) as client:
            removed = await AclAdmin(client).delete_acls(filters)
        print(f"Removed {len(removed)} ACLs:")
        _print_acls(removed)
        return 0
    return _run(go())


def _print_acls(acls) -> None:
    """Grouped by resource pattern, in kafka-acls' words."""
    by_resource: dict[tuple, list[AclBinding]] = {}
    for acl in acls:
        by_resource.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type),
                               []).append(acl)
    for (kind, name, pattern), items in by_resource.items():
        print(f"Current ACLs for resource `ResourcePattern(resourceType={kind.name}, name={name}, "
              f"patternType={pattern.name})`:")
        for acl in items:
            print(f" \t(principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
                  f"permissionType={acl.permission.name})")
        print()

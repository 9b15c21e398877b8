"""`kcore share-groups`: share groups (KIP-932), like kafka-share-groups.

    kcore share-groups list
    kcore share-groups describe GROUP   members, assignments, start offsets, lag
    kcore share-groups reset-offsets GROUP --topic T [--partition N ...]
        (--to-earliest | --to-latest | --to-offset N | --to-timestamp MS)
        [--execute]                     a dry run unless --execute
    kcore share-groups delete GROUP [--topic T ...]
                                        the group, or only its state for the topics
    kcore share-groups set-config GROUP NAME=VALUE ...
                                        share.auto.offset.reset, share.isolation.level, ...

reset-offsets and delete work only on a group without members
(NON_EMPTY_GROUP otherwise), as with Kafka's tool. Broker errors print
Kafka's error name and exit 1.
"""
from __future__ import annotations

from kcore.cli.client_commands import _client, _run, connection_arguments
from kcore.cli.groups import _dash, _offsets, _print_table, add_reset_arguments
from kcore.client import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from kcore.client.share_groups import ShareGroupAdmin


def add_parser(commands) -> None:
    common = connection_arguments()
    parser = commands.add_parser("share-groups", help="list, describe, reset offsets of, delete share groups")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[common], help="share group ids").set_defaults(run=run_list)
    describe = actions.add_parser("describe", parents=[common], help="members, start offsets and lag")
    describe.add_argument("group")
    describe.set_defaults(run=run_describe)
    reset = actions.add_parser("reset-offsets", parents=[common], help="move share-partition start offsets")
    add_reset_arguments(reset, "apply the plan (default: dry run)")
    reset.set_defaults(run=run_reset)
    delete = actions.add_parser("delete", parents=[common], help="delete an empty share group")
    delete.add_argument("group")
    delete.add_argument("--topic", action="append", help="delete only the state of these topics")
    delete.set_defaults(run=run_delete)
    configs = actions.add_parser("set-config", parents=[common], help="set share configs on every broker")
    configs.add_argument("group")
    configs.add_argument("settings", nargs="+", metavar="NAME=VALUE")
    configs.set_defaults(run=run_set_config)


def run_list(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            for group_id in await ShareGroupAdmin(client).list_groups():
                print(group_id)
        return 0
    return _run(go())


def run_describe(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            admin = ShareGroupAdmin(client)
            group = await admin.describe(args.group)
            offsets = await admin.offsets(args.group)
            print(f"Share group {group.group_id} is {group.state} with {len(group.members)} member(s), "
                  f"group epoch {group.group_epoch}, assignment epoch {group.assignment_epoch}")
            rows: list[tuple[object, ...]] = [("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")]
            for tp, offset in sorted(offsets.items()):
                rows.append((group.group_id, tp.topic, tp.partition, _dash(offset.start_offset),
                             _dash(offset.lag if offset.lag >= 0 else None)))
            _print_table(rows)
            if group.members:
                print()
                members: list[tuple[object, ...]] = [("MEMBER-ID", "EPOCH", "HOST", "CLIENT-ID",
                                                      "ASSIGNMENT")]
                for member in group.members:
                    assigned = ",".join(f"{tp.topic}-{tp.partition}" for tp in member.assignment) or "-"
                    members.append((member.member_id, member.member_epoch, member.client_host,
                                    member.client_id, assigned))
                _print_table(members)
        return 0
    return _run(go())


def run_reset(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            metadata = await client.refresh_metadata([args.topic])
            indexes = args.partition or sorted(metadata.topics[args.topic].partitions)
            partitions = [TopicPartition(args.topic, p) for p in indexes]
            earliest = await _offsets(client, partitions, EARLIEST_TIMESTAMP)
            latest = await _offsets(client, partitions, LATEST_TIMESTAMP)
            if args.to_earliest:
                wanted = earliest
            elif args.to_latest:
                wanted = latest
            elif args.to_timestamp is not None:
                found = await _offsets(client, partitions, args.to_timestamp)
                wanted = {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in partitions}
            else:
                wanted = {tp: args.to_offset for tp in partitions}
            plan = {tp: min(max(wanted[tp], earliest[tp]), latest[tp]) for tp in partitions}
            _print_table([("GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET")]
                         + [(args.group, tp.topic, tp.partition, offset) for tp, offset in plan.items()])
            if args.execute:
                await ShareGroupAdmin(client).alter_offsets(args.group, plan)
            else:
                print("Dry run: nothing changed (add --execute).")
        return 0
    return _run(go())


def run_delete(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            admin = ShareGroupAdmin(client)
            if args.topic:
                await admin.delete_offsets(args.group, args.topic)
                print(f"Deleted the state of share group {args.group} for {', '.join(args.topic)}")
            else:
                await admin.delete(args.group)
                print(f"Deleted share group {args.group}")
        return 0
    return _run(go())


def run_set_config(args) -> int:
    configs = {}
    for setting in args.settings:
        name, sep, value = setting.partition("=")
        if not sep:
            print(f"error: {setting!r} is not NAME=VALUE")
            return 2
        configs[name] = value

    async def go() -> int:
        async with _client(args) as client:
            await ShareGroupAdmin(client).set_configs(args.group, configs)
            print(f"Set {', '.join(configs)} of share group {args.group}")
        return 0
    return _run(go())

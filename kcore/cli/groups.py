"""`kcore groups`: consumer groups, like kafka-consumer-groups.

    kcore groups list
    kcore groups describe GROUP        members, assignments, committed offset, log end, lag
    kcore groups reset-offsets GROUP --topic T [--partition N ...]
        (--to-earliest | --to-latest | --to-offset N | --to-timestamp MS | --shift-by N)
        [--execute]                    a dry run unless --execute
    kcore groups delete GROUP

reset-offsets only works on a group without active members (the
coordinator refuses a commit from outside a live generation), as with
Kafka's tool. Broker errors print Kafka's error name and exit 1.
"""
from __future__ import annotations

from kcore.cli.client_commands import _client, _run, connection_arguments
from kcore.client import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from kcore.client.fetch import list_offsets
from kcore.client.groups import GroupAdmin

COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
           "CONSUMER-ID", "HOST", "CLIENT-ID")


def add_reset_arguments(reset, execute_help: str):
    """A reset-offsets command's group, topic, partitions and --execute;
    returns the group of its mutually exclusive targets."""
    reset.add_argument("group")
    reset.add_argument("--topic", required=True)
    reset.add_argument("--partition", type=int, action="append", help="only these partitions")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int)
    target.add_argument("--to-timestamp", type=int, metavar="MS")
    reset.add_argument("--execute", action="store_true", help=execute_help)
    return target


def add_parser(commands) -> None:
    common = connection_arguments()
    parser = commands.add_parser("groups", help="list, describe, reset offsets of, delete consumer groups")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)  # each action sets its own
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[common], help="group ids").set_defaults(run=run_list)
    describe = actions.add_parser("describe", parents=[common], help="members, offsets and lag")
    describe.add_argument("group")
    describe.set_defaults(run=run_describe)
    reset = actions.add_parser("reset-offsets", parents=[common], help="move committed offsets")
    target = add_reset_arguments(reset, "commit the plan (default: dry run)")
    target.add_argument("--shift-by", type=int, metavar="N")
    reset.set_defaults(run=run_reset)
    delete = actions.add_parser("delete", parents=[common], help="delete an empty group")
    delete.add_argument("group")
    delete.set_defaults(run=run_delete)


def run_list(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            for group_id, _ in await GroupAdmin(client).list_groups():
                print(group_id)
        return 0
    return _run(go())


def run_describe(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            admin = GroupAdmin(client)
            group = await admin.describe(args.group)
            broker_id, host, port = await admin.find_coordinator(args.group)
            committed = await admin.committed(args.group)
            owners = {tp: member for member in group.members for tp in member.assignment}
            partitions = sorted(set(committed) | set(owners))
            ends = await _offsets(client, partitions, LATEST_TIMESTAMP)
            print(f"Group {group.group_id} is {group.state} with {len(group.members)} member(s)"
                  + (f", protocol {group.protocol}" if group.protocol else "")
                  + f"; coordinator: broker {broker_id} ({host}:{port})")
            rows: list[tuple[object, ...]] = [COLUMNS]
            for tp in partitions:
                current = committed.get(tp)
                end = ends.get(tp)
                lag = end - current if current is not None and end is not None else None
                member = owners.get(tp)
                rows.append((group.group_id, tp.topic, tp.partition, _dash(current), _dash(end),
                             _dash(lag), member.member_id if member else "-",
                             member.client_host if member else "-",
                             member.client_id if member else "-"))
            _print_table(rows)
        return 0
    return _run(go())


def run_reset(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            admin = GroupAdmin(client)
            metadata = await client.refresh_metadata([args.topic])
            indexes = args.partition or sorted(metadata.topics[args.topic].partitions)
            partitions = [TopicPartition(args.topic, p) for p in indexes]
            plan = await _plan(client, admin, args, partitions)
            _print_table([("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
                         + [(args.group, tp.topic, tp.partition, offset) for tp, offset in plan.items()])
            if args.execute:
                await admin.commit(args.group, plan)
            else:
                print("Dry run: nothing committed (add --execute).")
        return 0
    return _run(go())


async def _plan(client, admin, args, partitions) -> dict[TopicPartition, int]:
    earliest = await _offsets(client, partitions, EARLIEST_TIMESTAMP)
    latest = await _offsets(client, partitions, LATEST_TIMESTAMP)
    if args.to_earliest:
        wanted = earliest
    elif args.to_latest:
        wanted = latest
    elif args.to_timestamp is not None:
        found = await _offsets(client, partitions, args.to_timestamp)
        wanted = {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in partitions}
    elif args.shift_by is not None:
        committed = await admin.committed(args.group)
        wanted = {tp: committed.get(tp, latest[tp]) + args.shift_by for tp in partitions}
    else:
        wanted = {tp: args.to_offset for tp in partitions}
    # Like Kafka's tool: a target outside the log is clamped into it.
    return {tp: min(max(wanted[tp], earliest[tp]), latest[tp]) for tp in partitions}


def run_delete(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            await GroupAdmin(client).delete(args.group)
            print(f"Deleted group {args.group}")
        return 0
    return _run(go())


async def _offsets(client, partitions, timestamp: int) -> dict[TopicPartition, int]:
    result: dict[TopicPartition, int] = {}
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in partitions:
        metadata = client.metadata.topics.get(tp.topic)
        if metadata is None or tp.partition not in metadata.partitions:
            metadata = (await client.refresh_metadata([tp.topic])).topics[tp.topic]
        by_leader.setdefault(metadata.partitions[tp.partition].leader_id, []).append(tp)
    for leader, tps in by_leader.items():
        connection = await client.connection(leader)
        listed = await list_offsets(connection, {tp: timestamp for tp in tps})
        result.update({tp: item.offset for tp, item in listed.items()})
    return result


def _dash(value) -> str:
    return "-" if value is None else str(value)


def _print_table(rows) -> None:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())

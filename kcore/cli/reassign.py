"""`kcore reassign-partitions`: move partition replicas, like
kafka-reassign-partitions.sh, with its JSON files.

    kcore reassign-partitions --reassignment-json-file F --execute [--throttle B/S]  start the moves
        (refused while any move is in progress, unless --additional;
        --disallow-replication-factor-change refuses moves that change a
        partition's replica count, KIP-860)
    kcore reassign-partitions --reassignment-json-file F --verify    done yet? (exit 1 if not)
    kcore reassign-partitions --reassignment-json-file F --cancel    move back
    kcore reassign-partitions --list                                 moves in progress
    kcore reassign-partitions --topics-to-move-json-file F --broker-list 1,2,3 --generate

The reassignment file: ``{"version":1,"partitions":[{"topic":"t",
"partition":0,"replicas":[2,3],"log_dirs":["any","/data/b"]}]}``:
``log_dirs`` (optional, one entry per replica) names the log dir each
replica goes to on its broker, "any" for wherever the broker puts it;
--execute starts those moves after the partition moves (log_dirs.py,
waiting up to --timeout ms for replicas being created), --verify and
--cancel cover them too. The topics file:
``{"version":1,"topics":[{"topic":"t"}]}``.
--execute prints the current assignment first, in the same format, to keep
for a rollback. Broker errors print Kafka's error name and exit 1; bad
usage or a bad file exits 2. --throttle limits the moves' replication to
that many bytes/s (reassign_throttle.py); --verify removes the throttle
once the moves are complete.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence

from kcore.cli.client_commands import EXIT_ERROR, EXIT_USAGE, _client, _run, connection_arguments
from kcore.cli.log_dirs import Replica, cancel_moves, execute_moves, verify_moves
from kcore.cli.reassign_throttle import clear_throttles, set_throttles
from kcore.client import Admin
from kcore.controller.placement import assign_replicas
from kcore.metadata import BrokerInfo, TopicError
from kcore.protocol.errors import ErrorCode

Partition = tuple[str, int]


class PlanError(ValueError):
    """A reassignment or topics file that does not parse."""


def add_parser(commands) -> None:
    parser = commands.add_parser("reassign-partitions", parents=[connection_arguments()],
                                 help="move partition replicas between brokers")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--execute", action="store_true", help="start the reassignment in the file")
    action.add_argument("--verify", action="store_true",
                        help="check whether the reassignment in the file is complete")
    action.add_argument("--cancel", action="store_true",
                        help="cancel the reassignment in the file (back to the original replicas)")
    action.add_argument("--list", action="store_true", help="list the reassignments in progress")
    action.add_argument("--generate", action="store_true",
                        help="propose an assignment of the topics over --broker-list")
    parser.add_argument("--additional", action="store_true",
                        help="with --execute: start these moves although others are in progress "
                             "(a move of a partition already moving replaces it)")
    parser.add_argument("--disallow-replication-factor-change", action="store_true",
                        help="with --execute: refuse moves that change a partition's number of "
                             "replicas (INVALID_REPLICATION_FACTOR)")
    parser.add_argument("--reassignment-json-file", metavar="FILE")
    parser.add_argument("--topics-to-move-json-file", metavar="FILE")
    parser.add_argument("--broker-list", metavar="IDS", help="comma-separated broker ids")
    parser.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_S",
                        help="with --execute: replication bytes/s of the moves (-1: no throttle)")
    parser.add_argument("--timeout", type=int, default=10_000, metavar="MS",
                        help="how long to wait for log dir moves to start (default 10000)")
    parser.set_defaults(run=run)


def run(args) -> int:
    try:
        if args.generate:
            topics = parse_topics_file(_read(args.topics_to_move_json_file, "--topics-to-move-json-file"))
            brokers = parse_broker_list(args.broker_list)
            return _run(_generate(args, topics, brokers))
        if args.list:
            return _run(_list(args))
        text = _read(args.reassignment_json_file, "--reassignment-json-file")
        plan, moves = parse_reassignment(text), parse_log_dirs(text)
    except PlanError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.execute:
        return _run(_execute(args, plan, moves))
    if args.verify:
        return _run(_verify(args, plan, moves))
    return _run(_cancel(args, plan, moves))


# -- files -----------------------------------------------------------------------------------
def _read(path: str | None, option: str) -> str:
    if not path:
        raise PlanError(f"{option} is required for this action")
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as exc:
        raise PlanError(f"{path}: {exc.strerror}") from None


def _load(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise PlanError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise PlanError("the file must hold a JSON object")
    if value.get("version", 1) != 1:
        raise PlanError(f"unsupported version {value.get('version')!r} (only 1)")
    return value


def parse_reassignment(text: str) -> dict[Partition, list[int]]:
    """(topic, partition) -> target replicas, in file order."""
    entries = _load(text).get("partitions")
    if not isinstance(entries, list) or not entries:
        raise PlanError('"partitions" must be a non-empty list')
    plan: dict[Partition, list[int]] = {}
    for entry in entries:
        try:
            key = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise PlanError(f"entry {entry!r} needs topic, partition and a replicas list") from None
        if key in plan:
            raise PlanError(f"{key[0]}-{key[1]} appears twice")
        plan[key] = replicas
    return plan


def parse_log_dirs(text: str) -> dict[Replica, str]:
    """(topic, partition, broker) -> the log dir named for it ("any" left
    out); the lists must match the replicas, as Kafka's tool checks."""
    moves: dict[Replica, str] = {}
    for entry in _load(text).get("partitions") or []:
        dirs = entry.get("log_dirs") if isinstance(entry, dict) else None
        if dirs is None:
            continue
        replicas = entry.get("replicas", [])
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise PlanError(f"entry {entry!r}: log_dirs must be a list of strings")
        if len(dirs) != len(replicas):
            raise PlanError(f"Size of replicas list {replicas} is different from size of log dirs "
                            f"list {dirs} for partition {entry.get('topic')}-{entry.get('partition')}")
        for replica, path in zip(replicas, dirs):
            if path != "any":
                moves[(str(entry["topic"]), int(entry["partition"]), int(replica))] = path
    return moves


def parse_topics_file(text: str) -> list[str]:
    topics = _load(text).get("topics")
    if not isinstance(topics, list) or not topics:
        raise PlanError('"topics" must be a non-empty list')
    try:
        return [str(entry["topic"]) for entry in topics]
    except (KeyError, TypeError):
        raise PlanError('each entry of "topics" needs a "topic"') from None


def parse_broker_list(text: str | None) -> list[int]:
    if not text:
        raise PlanError("--broker-list is required with --generate")
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PlanError(f"--broker-list {text!r} is not a list of broker ids") from None


def plan_json(assignment: Mapping[Partition, Sequence[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(assignment.items())]}, separators=(",", ":"))


def _names(keys) -> str:
    return ",".join(f"{t}-{p}" for t, p in keys)


# -- actions ---------------------------------------------------------------------------------
async def _current_replicas(admin: Admin, topics: Sequence[str]) -> dict[Partition, tuple[int, ...]]:
    described = await admin.describe_topics(sorted(set(topics)))
    return {(t.name, index): p.replicas for t in described for index, p in t.partitions.items()}


# Kafka's ReassignPartitionsCommand refuses --execute while any partition
# is moving, so that a plan does not silently replace a move in progress.
EXISTING_REASSIGNMENT = ("Cannot execute because there is an existing partition assignment. "
                         "Use --additional to start this one in addition to it.")


async def _execute(args, plan: dict[Partition, list[int]], moves: dict[Replica, str]) -> int:
    async with _client(args) as client:
        admin = Admin(client)
        if not args.additional:
            ongoing = await admin.list_partition_reassignments(None)
            if ongoing:
                print(f"Error: {EXISTING_REASSIGNMENT} In progress: {_names(sorted(ongoing))}",
                      file=sys.stderr)
                return EXIT_ERROR
        current = await _current_replicas(admin, [t for t, _ in plan])
        print("Current partition replica assignment\n")
        print(plan_json({key: current[key] for key in plan if key in current}))
        print("\nSave this to use as the --reassignment-json-file option during rollback")
        if args.throttle >= 0:
            await set_throttles(admin, current, plan, args.throttle)
            print("Warning: You must run --verify periodically, until the reassignment completes, "
                  "to ensure the throttle is removed.")
            print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
        results = await admin.alter_partition_reassignments(
            dict(plan), allow_replication_factor_change=not args.disallow_replication_factor_change)
        status = _report(results, "Successfully started partition reassignment")
        if moves and status == 0:
            status = await execute_moves(client, moves, args.timeout)
    return status


async def _cancel(args, plan: dict[Partition, list[int]], moves: dict[Replica, str]) -> int:
    async with _client(args) as client:
        results = await Admin(client).alter_partition_reassignments({key: None for key in plan})
    status = _report(results, "Successfully cancelled partition reassignment")
    if moves:
        status = max(status, await cancel_moves(args, moves, args.timeout))
    return status


def _report(results: dict[Partition, tuple[int, str | None]], success: str) -> int:
    done = [key for key, (code, _) in results.items() if code == ErrorCode.NONE]
    if done:
        print(f"{success}{'s' if len(done) > 1 else ''} for {_names(done)}")
    failed = 0
    for (topic, index), (code, message) in results.items():
        if code != ErrorCode.NONE:
            failed += 1
            print(f"Error on {topic}-{index}: {ErrorCode(code).name}"
                  f"{': ' + message if message else ''}", file=sys.stderr)
    return EXIT_ERROR if failed else 0


async def _verify(args, plan: dict[Partition, list[int]], moves: dict[Replica, str]) -> int:
    async with _client(args) as client:
        admin = Admin(client)
        ongoing = await admin.list_partition_reassignments(list(plan))
        current = await _current_replicas(admin, [t for t, _ in plan])
        complete = not ongoing and all(list(current.get(key, ())) == target
                                       for key, target in plan.items())
    print("Status of partition reassignment:")
    unfinished = 0
    for (topic, index), target in plan.items():
        name = f"{topic}-{index}"
        if (topic, index) in ongoing:
            unfinished += 1
            print(f"Reassignment of partition {name} is still in progress.")
        elif list(current.get((topic, index), ())) == target:
            print(f"Reassignment of partition {name} is completed.")
        else:
            unfinished += 1
            print(f"There is no active reassignment of partition {name}, but replica set is "
                  f"{list(current.get((topic, index), ()))} rather than {target}.")
    if moves and not await verify_moves(args, moves):
        unfinished += 1
        complete = False
    if complete:
        async with _client(args) as client:
            await clear_throttles(Admin(client), [t for t, _ in plan])
        print("\nClearing broker-level throttles on brokers and topic-level throttles on the "
              "reassigned topics.\nThrottle was removed.")
    return EXIT_ERROR if unfinished else 0


async def _list(args) -> int:
    async with _client(args) as client:
        ongoing = await Admin(client).list_partition_reassignments(None)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for (topic, index), found in sorted(ongoing.items()):
        print(f"{topic}-{index}: replicas: {','.join(map(str, found.replicas))}. "
              f"adding: {','.join(map(str, found.adding_replicas))}. "
              f"removing: {','.join(map(str, found.removing_replicas))}.")
    return 0


async def _generate(args, topics: list[str], broker_ids: list[int]) -> int:
    async with _client(args) as client:
        admin = Admin(client)
        current = await _current_replicas(admin, topics)
        known = (await admin.describe_cluster()).brokers
    unknown = [b for b in broker_ids if b not in known]
    if unknown:
        print(f"Error: brokers {unknown} are not in the cluster ({sorted(known)})", file=sys.stderr)
        return EXIT_ERROR
    brokers = [BrokerInfo(b, known[b].host, known[b].port, known[b].rack) for b in broker_ids]
    proposed: dict[Partition, list[int]] = {}
    try:
        for topic in dict.fromkeys(topics):
            indexes = sorted(index for t, index in current if t == topic)
            width = len(current[(topic, indexes[0])]) if indexes else 0
            for index, replicas in assign_replicas(len(indexes), width, brokers).items():
                proposed[(topic, indexes[index])] = replicas
    except TopicError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    print("Current partition replica assignment")
    print(plan_json({key: r for key, r in current.items() if key in proposed}))
    print("\nProposed partition reassignment configuration")
    print(plan_json(proposed))
    return 0

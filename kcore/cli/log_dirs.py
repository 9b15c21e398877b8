"""`kcore log-dirs describe`: each broker's log dirs, what kafka-log-dirs.sh
--describe prints, and the log dir moves of `kcore reassign-partitions`.

    kcore log-dirs describe [--broker-list 1,2] [--topic-list a,b]

prints, as Kafka's tool does, two lines and one JSON document::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2
    {"brokers":[{"broker":1,"logDirs":[{"logDir":"/data/a","error":null,
      "partitions":[{"partition":"t-0","size":512,"offsetLag":0,"isFuture":false}]}]}],
     "version":1}

``error`` is the Java class name of a dir's error (a failed dir:
``org.apache.kafka.common.errors.KafkaStorageException``). Every broker by
default; a broker id not in the cluster is an error (exit 1).

Log dir moves (``log_dirs`` in a reassignment file, Kafka's
ReassignPartitionsCommand): each replica with a path is sent to its broker
with AlterReplicaLogDirs, again every 100 ms while the broker answers
REPLICA_NOT_AVAILABLE (the replica is still being created there by the
partition reassignment), until ``--timeout``.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Mapping

from kcore.cli.client_commands import EXIT_ERROR, EXIT_USAGE, _client, _run, connection_arguments
from kcore.client import Admin
from kcore.client.log_dirs import LogDirAdmin
from kcore.protocol.errors import ErrorCode

# (topic, partition, broker id): Kafka's TopicPartitionReplica.
Replica = tuple[str, int, int]

# Kafka's tool retries a replica not created yet this often.
RETRY_S = 0.1
EXCEPTION_CLASSES: dict[int, str] = {
    ErrorCode.KAFKA_STORAGE_ERROR: "org.apache.kafka.common.errors.KafkaStorageException",
    ErrorCode.UNKNOWN_SERVER_ERROR: "org.apache.kafka.common.errors.UnknownServerException",
}


def add_parser(commands) -> None:
    parser = commands.add_parser("log-dirs", help="describe the log dirs of brokers")
    actions = parser.add_subparsers(dest="action", required=True)
    describe = actions.add_parser("describe", parents=[connection_arguments()],
                                  help="each broker's log dirs with their partitions' sizes and lag")
    describe.add_argument("--broker-list", default="", metavar="IDS",
                          help="comma-separated broker ids (default: every broker)")
    describe.add_argument("--topic-list", default="", metavar="TOPICS",
                          help="comma-separated topics (default: every topic)")
    describe.set_defaults(run=run)


def run(args) -> int:
    try:
        brokers = [int(part) for part in args.broker_list.split(",") if part.strip()]
    except ValueError:
        print(f"Error: --broker-list {args.broker_list!r} is not a list of broker ids",
              file=sys.stderr)
        return EXIT_USAGE
    topics = {part.strip() for part in args.topic_list.split(",") if part.strip()}
    return _run(_describe(args, brokers, topics))


async def _describe(args, wanted: list[int], topics: set[str]) -> int:
    async with _client(args) as client:
        cluster = sorted((await Admin(client).describe_cluster()).brokers)
        missing = sorted(set(wanted) - set(cluster))
        if missing:
            print(f"ERROR: The given brokers do not exist from --broker-list: "
                  f"{','.join(map(str, missing))}. Current existent brokers: "
                  f"{','.join(map(str, cluster))}", file=sys.stderr)
            return EXIT_ERROR
        brokers = sorted(set(wanted)) if wanted else cluster
        print("Querying brokers for log directories information")
        admin = LogDirAdmin(client)
        described = {broker: await admin.describe_log_dirs(broker) for broker in brokers}
    print(f"Received log directory information from brokers {','.join(map(str, brokers))}")
    print(json.dumps({"brokers": [
        {"broker": broker, "logDirs": [
            {"logDir": path,
             "error": None if d.error_code == ErrorCode.NONE else _exception_class(d.error_code),
             "partitions": [{"partition": f"{topic}-{index}", "size": info.size,
                             "offsetLag": info.offset_lag, "isFuture": info.is_future}
                            for (topic, index), info in sorted(d.replicas.items())
                            if not topics or topic in topics]}
            for path, d in dirs.items()]}
        for broker, dirs in described.items()], "version": 1}, separators=(",", ":")))
    return 0


def _exception_class(code: int) -> str:
    known = EXCEPTION_CLASSES.get(code)
    return known if known is not None else ErrorCode(code).name


# -- log dir moves of reassign-partitions ---------------------------------------------------------
def replica_name(replica: Replica) -> str:
    """Kafka's TopicPartitionReplica.toString: topic-partition-broker."""
    return f"{replica[0]}-{replica[1]}-{replica[2]}"


async def execute_moves(client, moves: Mapping[Replica, str], timeout_ms: int) -> int:
    """AlterReplicaLogDirs for each replica until its broker starts the
    move; 0, or EXIT_ERROR after an error or the timeout."""
    admin = LogDirAdmin(client)
    pending = dict(moves)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        for broker in sorted({b for _, _, b in pending}):
            asked = {(t, p): path for (t, p, b), path in pending.items() if b == broker}
            answers = await admin.alter_replica_log_dirs(broker, asked)
            for (topic, index), code in sorted(answers.items()):
                replica = (topic, index, broker)
                if code == ErrorCode.NONE:
                    print(f"Successfully started moving log directory to {pending.pop(replica)} "
                          f"for replica {topic}-{index} with broker {broker} ")
                elif code != ErrorCode.REPLICA_NOT_AVAILABLE:
                    print(f"Error moving replica {replica_name(replica)} to {pending[replica]}: "
                          f"{ErrorCode(code).name}", file=sys.stderr)
                    return EXIT_ERROR
        if not pending:
            return 0
        if time.monotonic() >= deadline:
            print(f"Error: Timed out before log directory move{'s' if len(pending) > 1 else ''} "
                  f"could be started for: {','.join(map(replica_name, sorted(pending)))}",
                  file=sys.stderr)
            return EXIT_ERROR
        await asyncio.sleep(RETRY_S)


async def move_states(client, moves: Mapping[Replica, str]) -> tuple[list[str], bool, dict]:
    """Kafka's findLogDirMoveStates: one line per replica, whether every
    move is done, and the moves in progress (replica -> its current dir)."""
    admin = LogDirAdmin(client)
    lines, done, active = [], True, {}
    for broker in sorted({b for _, _, b in moves}):
        replicas = sorted(r for r in moves if r[2] == broker)
        where = await admin.describe_replica_log_dirs(broker, [(t, p) for t, p, _ in replicas])
        for topic, index, _ in replicas:
            replica, target = (topic, index, broker), moves[(topic, index, broker)]
            dirs = where.get((topic, index))
            name = f"{topic}-{index}"
            if dirs is None or dirs.current is None:
                done = False
                lines.append(f"Partition {name} cannot be found in any live log directory on "
                             f"broker {broker}.")
            elif dirs.future is not None:
                done = False
                active[replica] = dirs.current
                lines.append(f"Reassignment of replica {replica_name(replica)} is still in progress."
                             if dirs.future == target else
                             f"Partition {name} on broker {broker} is being moved to log dir "
                             f"{dirs.future} instead of {target}.")
            elif dirs.current == target:
                lines.append(f"Reassignment of replica {replica_name(replica)} completed successfully.")
            else:
                done = False
                lines.append(f"Partition {name} on broker {broker} is not being moved from log dir "
                             f"{dirs.current} to {target}.")
    return lines, done, active


async def verify_moves(args, moves: Mapping[Replica, str]) -> bool:
    """Print the state of each move; whether all are done."""
    async with _client(args) as client:
        lines, done, _ = await move_states(client, moves)
    for line in lines:
        print(line)
    return done


async def cancel_moves(args, moves: Mapping[Replica, str], timeout_ms: int) -> int:
    """Moves in progress go back to (stay in) their current dir."""
    async with _client(args) as client:
        _, _, active = await move_states(client, moves)
        if not active:
            print("None of the specified partition moves are active.")
            return 0
        return await execute_moves(client, active, timeout_ms)

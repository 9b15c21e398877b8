"""`kcore topics|produce|consume`: command-line clients on kcore.client.

    kcore topics create NAME [--partitions N] [--replication-factor N] [--config k=v ...]
    kcore topics list | describe [NAME] | alter NAME --config k=v [--delete-config k] | delete NAME
    kcore produce TOPIC [--key-separator SEP] [--header k=v ...] [--partition N]
                        [--acks 0|1|all] [--compression none|gzip|snappy|lz4|zstd]
    kcore consume TOPIC [--partition N] [--from-beginning | --offset N | --from-timestamp MS]
                        [--max-messages N] [--timeout-ms MS] [--format TEMPLATE]

Every command takes ``--bootstrap-server`` (default 127.0.0.1:9092) and
``--command-config FILE``, a properties file of client security settings
(``security.protocol``, ``sasl.*``, ``ssl.*``) as Kafka's tools take it. A
broker error prints Kafka's error name and message on stderr and exits 1;
bad usage exits 2.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcore.client import (
    ACKS_ALL,
    EARLIEST_TIMESTAMP,
    Admin,
    AlterConfigOp,
    ClientError,
    ConfigResourceType,
    Consumer,
    KafkaClient,
    KafkaError,
    NewTopic,
    OffsetReset,
    ProduceError,
    Producer,
    TopicPartition,
)
from kcore.client.formatting import DEFAULT_TEMPLATE, RecordFormatter
from kcore.client.security import ClientSecurity
from kcore.metadata import NO_TOPIC_ID, topic_id_to_string
from kcore.protocol.compression import CompressionType
from kcore.protocol.errors import ErrorCode

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
CLIENT_ID = "kcore-cli"
# stdin is read in chunks of this size off the event loop; 64 KiB is a pipe's
# default capacity on Linux, so one read usually drains what is waiting.
STDIN_CHUNK = 64 * 1024
# 16 chunks (1 MiB) of read-ahead keep the producer busy while the next
# chunk is read.
STDIN_QUEUE_CHUNKS = 16
# Longest a consume poll waits before checking --timeout-ms again.
POLL_INTERVAL_S = 0.5
EXIT_ERROR = 1
EXIT_USAGE = 2


def add_parser(commands) -> None:
    common = connection_arguments()
    _add_topics_parser(commands, common)
    _add_produce_parser(commands, common)
    _add_consume_parser(commands, common)


def run(args) -> int:
    """Run the command's coroutine (``args.handler``); returns the exit status."""
    return _run(args.handler(args))


# ------------------------------------------------------------------ parsing

def _add_topics_parser(commands, common) -> None:
    topics = commands.add_parser("topics", help="create, list, describe, alter, delete topics")
    actions = topics.add_subparsers(dest="topics_command", required=True)

    create = actions.add_parser("create", parents=[common], help="create a topic")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=-1,
                        help="partition count (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=int, default=-1,
                        help="replicas per partition (default: the broker's default)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        type=_key_value, help="topic config, repeatable")
    create.set_defaults(run=run, handler=_topics_create)

    listing = actions.add_parser("list", parents=[common], help="list topic names")
    listing.set_defaults(run=run, handler=_topics_list)

    describe = actions.add_parser("describe", parents=[common],
                                  help="partitions, leaders, replicas, ISR and configs")
    describe.add_argument("name", nargs="?", help="topic (default: every topic)")
    describe.set_defaults(run=run, handler=_topics_describe)

    alter = actions.add_parser("alter", parents=[common], help="change topic configs")
    alter.add_argument("name")
    alter.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       type=_key_value, help="set a config, repeatable")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="return a config to its default, repeatable")
    alter.set_defaults(run=run, handler=_topics_alter)

    delete = actions.add_parser("delete", parents=[common], help="delete a topic")
    delete.add_argument("name")
    delete.set_defaults(run=run, handler=_topics_delete)

    elect = actions.add_parser(
        "elect-leaders", parents=[common],
        help="move leadership to the preferred replica (or, --unclean, to any live replica)")
    elect.add_argument("--topic", help="only this topic (default: every topic)")
    elect.add_argument("--partition", type=int, action="append", default=[],
                       help="only this partition of --topic, repeatable")
    elect.add_argument("--unclean", action="store_true",
                       help="elect any live replica where no in-sync replica lives "
                            "(acknowledged data may be lost)")
    elect.set_defaults(run=run, handler=_topics_elect_leaders)


def _add_produce_parser(commands, common) -> None:
    produce = commands.add_parser(
        "produce", parents=[common], help="produce stdin lines as records",
        description="Each stdin line becomes one record. Keys go to partitions as Kafka's "
                    "default partitioner puts them (murmur2); lines without a key fill "
                    "one partition's batch at a time.")
    produce.add_argument("topic")
    produce.add_argument("--key-separator", metavar="SEP",
                         help="split each line at the first SEP into key and value")
    produce.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                         type=_key_value, help="header added to every record, repeatable")
    produce.add_argument("--partition", type=int, help="send every record to this partition")
    produce.add_argument("--acks", choices=["0", "1", "all", "-1"], default="1",
                         help="0: no answer, 1: leader appended, all: every in-sync replica")
    produce.add_argument("--compression", choices=[c.kafka_name for c in CompressionType],
                         default="none")
    produce.add_argument("--linger-ms", type=float, default=5.0,
                         help="longest a batch waits for more lines (default 5)")
    produce.set_defaults(run=run, handler=_produce)


def _add_consume_parser(commands, common) -> None:
    consume = commands.add_parser(
        "consume", parents=[common], help="print records of a topic",
        description="Prints records with a kcat-style template: %t topic, %p partition, "
                    "%o offset, %T timestamp, %k key, %K key length, %s value, "
                    "%S value length, %h headers (k=v,...), %% a percent sign; escapes "
                    "\\n \\t \\r \\\\ \\xHH. Nothing is added after a record: end the "
                    "template with \\n. Starts at the end unless told otherwise.")
    consume.add_argument("topic")
    consume.add_argument("--partition", type=int, help="only this partition")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true",
                       help="start at the earliest offset")
    start.add_argument("--offset", type=_start_offset, metavar="N",
                       help="start at offset N (negative: N before the end; or earliest/latest)")
    start.add_argument("--from-timestamp", type=int, metavar="MS",
                       help="start at the first record with a timestamp >= MS (ms since epoch)")
    consume.add_argument("--max-messages", type=int, metavar="N", help="exit after N records")
    consume.add_argument("--timeout-ms", type=int, metavar="MS",
                         help="exit after MS ms without new records (default: run until ^C)")
    consume.add_argument("--format", default=DEFAULT_TEMPLATE, metavar="TEMPLATE",
                         help="output template (default '%%s\\n': values one per line)")
    consume.set_defaults(run=run, handler=_consume)


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _start_offset(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an offset, earliest or latest, got {text!r}") from None


# ------------------------------------------------------------------ running

def _run(coroutine) -> int:
    try:
        import uvloop
        runner: Callable[..., Any] = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        return runner(coroutine)
    except ClientError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 0


def connection_arguments() -> argparse.ArgumentParser:
    """--bootstrap-server and --command-config, shared by every client command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"broker(s) to start from, comma-separated (default {DEFAULT_BOOTSTRAP})")
    common.add_argument("--command-config", metavar="FILE", type=_security_file,
                        help="client security settings (security.protocol, sasl.*, ssl.*)")
    return common


def _security_file(path: str) -> ClientSecurity:
    try:
        return ClientSecurity.from_file(path)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from None


def _client(args) -> KafkaClient:
    return KafkaClient(args.bootstrap_server, client_id=CLIENT_ID,
                       security=getattr(args, "command_config", None))


async def _topics_create(args) -> int:
    async with _client(args) as client:
        await Admin(client).create_topics([NewTopic(
            args.name, args.partitions, args.replication_factor, dict(args.config))])
    print(f"Created topic {args.name}.")
    return 0


async def _topics_list(args) -> int:
    async with _client(args) as client:
        for name in await Admin(client).list_topics():
            print(name)
    return 0


async def _topics_delete(args) -> int:
    async with _client(args) as client:
        await Admin(client).delete_topics([args.name])
    print(f"Deleted topic {args.name}.")
    return 0


async def _topics_alter(args) -> int:
    if not args.config and not args.delete_config:
        print("kcore topics alter: give --config KEY=VALUE or --delete-config KEY",
              file=sys.stderr)
        return EXIT_USAGE
    operations = [(key, AlterConfigOp.SET, value) for key, value in args.config]
    operations += [(key, AlterConfigOp.DELETE, None) for key in args.delete_config]
    async with _client(args) as client:
        await Admin(client).incremental_alter_configs(ConfigResourceType.TOPIC, args.name,
                                                      operations)
    print(f"Updated config for topic {args.name}.")
    return 0


async def _topics_elect_leaders(args) -> int:
    async with _client(args) as client:
        admin = Admin(client)
        partitions = None
        if args.topic:
            indexes = args.partition or [
                index for t in await admin.describe_topics([args.topic]) for index in t.partitions]
            partitions = [(args.topic, index) for index in indexes]
        results = await admin.elect_leaders(partitions, unclean=args.unclean)
    failed = 0
    for (topic, index), (code, message) in sorted(results.items()):
        if code == ErrorCode.NONE:
            print(f"Elected a new leader for {topic}-{index}.")
        elif code == ErrorCode.ELECTION_NOT_NEEDED:
            print(f"{topic}-{index}: its preferred leader leads already.")
        else:
            failed += 1
            print(f"{topic}-{index}: {ErrorCode(code).name}{': ' + message if message else ''}",
                  file=sys.stderr)
    return EXIT_ERROR if failed else 0


async def _topics_describe(args) -> int:
    async with _client(args) as client:
        admin = Admin(client)
        topics = await admin.describe_topics([args.name] if args.name else None)
        configs = await admin.describe_configs(ConfigResourceType.TOPIC,
                                               [t.name for t in topics]) if topics else {}
    for topic in topics:
        print(describe_topic_text(topic, configs.get(topic.name, [])))
    return 0


def describe_topic_text(topic, configs) -> str:
    """kafka-topics --describe style: one topic line (with its id when the
    broker says it: Metadata v10+), then one line per partition."""
    overrides = ",".join(f"{c.name}={'<sensitive>' if c.is_sensitive else c.value}"
                         for c in configs if not c.is_default)
    replication = max((len(p.replicas) for p in topic.partitions.values()), default=0)
    topic_id = "" if topic.topic_id == NO_TOPIC_ID else f"TopicId: {topic_id_to_string(topic.topic_id)}\t"
    lines = [f"Topic: {topic.name}\t{topic_id}PartitionCount: {topic.num_partitions}\t"
             f"ReplicationFactor: {replication}\tConfigs: {overrides}"]
    for partition in topic.partitions.values():
        lines.append(
            f"\tTopic: {topic.name}\tPartition: {partition.partition}\t"
            f"Leader: {partition.leader_id if partition.leader_id >= 0 else 'none'}\t"
            f"Replicas: {','.join(map(str, partition.replicas))}\t"
            f"Isr: {','.join(map(str, partition.isr))}")
    return "\n".join(lines)


# ------------------------------------------------------------------ produce

@dataclass
class _ProduceSummary:
    records_per_partition: dict[int, int] = field(default_factory=dict)

    def delivered(self, tp: TopicPartition, record_count: int, _result) -> None:
        counts = self.records_per_partition
        counts[tp.partition] = counts.get(tp.partition, 0) + record_count


async def _produce(args) -> int:
    acks = ACKS_ALL if args.acks in ("all", "-1") else int(args.acks)
    summary = _ProduceSummary()
    started = time.monotonic()
    async with _client(args) as client:
        producer = Producer(client, acks=acks, linger_ms=args.linger_ms,
                            compression=CompressionType[args.compression.upper()],
                            on_delivery=summary.delivered)
        await producer.partitions_for(args.topic)
        try:
            failure = await _send_lines(args, producer)
        except asyncio.CancelledError:
            # ^C on the top-level task: the lines read so far are still sent.
            failure = None
        try:
            await producer.flush()
        except ProduceError as exc:
            failure = f"{exc.failed_records} records not produced: {exc}"
    _print_produce_summary(args.topic, producer.stats, summary, time.monotonic() - started)
    if failure:
        print(f"Error: {failure}", file=sys.stderr)
        return EXIT_ERROR
    return 0


async def _send_lines(args, producer: Producer) -> str | None:
    """Queue every stdin line; returns what stopped it early, if anything."""
    headers = [(key, value.encode()) for key, value in args.header]
    separator = args.key_separator.encode() if args.key_separator else None
    line_number = 0
    async for line in _stdin_lines():
        line_number += 1
        key, value = None, line
        if separator is not None:
            key, found, value = line.partition(separator)
            if not found:
                return f"no key separator {args.key_separator!r} on line {line_number}"
        await producer.send(args.topic, value, key=key, headers=headers,
                            partition=args.partition)
    return None


async def _stdin_lines():
    """stdin split into lines (without \\n or \\r\\n).

    A daemon thread does the blocking reads (epoll cannot watch regular
    files, and a daemon thread does not hold up exit on ^C); at most
    STDIN_QUEUE_CHUNKS chunks wait in the queue, so a slow broker slows the
    reading down instead of filling memory.
    """
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(STDIN_QUEUE_CHUNKS)

    def read() -> None:
        fd = sys.stdin.fileno()
        while True:
            chunk = os.read(fd, STDIN_CHUNK)
            asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop).result()
            if not chunk:
                return

    threading.Thread(target=read, name="kcore-stdin", daemon=True).start()
    pending = b""
    while chunk := await chunks.get():
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            yield line[:-1] if line.endswith(b"\r") else line
    if pending:
        yield pending[:-1] if pending.endswith(b"\r") else pending


def _print_produce_summary(topic: str, stats, summary: _ProduceSummary, seconds: float) -> None:
    partitions = ", ".join(f"{p}: {n}" for p, n in sorted(summary.records_per_partition.items()))
    print(f"Produced {stats.records} records ({stats.bytes} bytes in {stats.batches} batches) "
          f"to {topic} in {seconds:.2f} s; records per partition: {{{partitions}}}",
          file=sys.stderr)


# ------------------------------------------------------------------ consume

async def _consume(args) -> int:
    try:
        formatter = RecordFormatter(args.format)
    except ValueError as exc:
        print(f"kcore consume: {exc}", file=sys.stderr)
        return EXIT_USAGE
    async with _client(args) as client:
        # An offset the user named must exist; elsewhere (records deleted
        # by retention while consuming) carry on from the earliest one.
        explicit = isinstance(args.offset, int)
        consumer = Consumer(client, auto_offset_reset=OffsetReset.NONE if explicit
                            else OffsetReset.EARLIEST)
        printed = _Printed()
        try:
            await _position(consumer, args)
            await _print_records(consumer, formatter, args, printed)
        except asyncio.CancelledError:
            pass  # ^C on the top-level task is how a consume without limits ends
        finally:
            await consumer.close()
    print(f"Processed a total of {printed.count} messages", file=sys.stderr)
    return 0


@dataclass
class _Printed:
    count: int = 0


async def _print_records(consumer: Consumer, formatter: RecordFormatter, args,
                         printed: _Printed) -> None:
    """Print until --max-messages, --timeout-ms without records, or a closed stdout."""
    out = sys.stdout.buffer
    deadline = _deadline(args.timeout_ms)
    while args.max_messages is None or printed.count < args.max_messages:
        wait = POLL_INTERVAL_S if deadline is None else deadline - time.monotonic()
        if wait <= 0:
            return
        polled = await consumer.poll(min(wait, POLL_INTERVAL_S))
        if not polled:
            continue
        deadline = _deadline(args.timeout_ms)
        chunks = []
        for tp, records in polled.items():
            if args.max_messages is not None:
                records = records[:args.max_messages - printed.count]
            printed.count += len(records)
            chunks += [formatter.format(tp.topic, tp.partition, r) for r in records]
        if not _write(out, b"".join(chunks)):
            return


async def _position(consumer: Consumer, args) -> None:
    partitions = await consumer.partitions_of(args.topic)
    if args.partition is not None:
        wanted = TopicPartition(args.topic, args.partition)
        if wanted not in partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"topic {args.topic} has {len(partitions)} partitions", str(wanted))
        partitions = [wanted]
    offset = args.offset
    if args.from_beginning or offset == "earliest":
        await consumer.seek_to_beginning(partitions)
    elif args.from_timestamp is not None:
        await consumer.seek_to_timestamp(partitions, args.from_timestamp)
    elif isinstance(offset, int) and offset >= 0:
        consumer.assign(dict.fromkeys(partitions, offset))
    elif isinstance(offset, int):
        await consumer.seek_to_end(partitions)
        beginning = await consumer.offsets_for_times(
            dict.fromkeys(partitions, EARLIEST_TIMESTAMP))
        consumer.assign({tp: max(beginning[tp], consumer.positions[tp] + offset)
                         for tp in partitions})
    else:
        await consumer.seek_to_end(partitions)


def _deadline(timeout_ms: int | None) -> float | None:
    return None if timeout_ms is None else time.monotonic() + timeout_ms / 1000


def _write(out, data: bytes) -> bool:
    """Write and flush; False when the reader went away (e.g. `| head`)."""
    try:
        out.write(data)
        out.flush()
        return True
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return False

"""`kcore transactions`: transactional ids and hanging transactions, like
kafka-transactions.

    kcore transactions list                        every transactional id, with its coordinator
    kcore transactions describe --transactional-id ID
    kcore transactions describe-producers --topic T --partition N
    kcore transactions abort --topic T --partition N --start-offset O

abort ends a hanging transaction (one its coordinator no longer drives,
whose open records hold the partition's last stable offset back and so
block read_committed consumers): it finds the producer whose open
transaction starts at O (describe-producers shows them) and writes the
ABORT marker to the partition. Broker errors print Kafka's error name and
exit 1.
"""
from __future__ import annotations

import argparse
import time

from kcore.cli.client_commands import _client, _run, connection_arguments
from kcore.cli.groups import _dash, _print_table
from kcore.client.transactions import TransactionAdmin


def add_parser(commands) -> None:
    common = connection_arguments()
    partition = argparse.ArgumentParser(add_help=False)
    partition.add_argument("--topic", required=True)
    partition.add_argument("--partition", type=int, required=True)
    parser = commands.add_parser("transactions",
                                 help="list and describe transactions, abort hanging ones")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)  # each action sets its own
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[common], help="transactional ids").set_defaults(run=run_list)
    describe = actions.add_parser("describe", parents=[common], help="one transactional id's state")
    describe.add_argument("--transactional-id", required=True)
    describe.set_defaults(run=run_describe)
    producers = actions.add_parser("describe-producers", parents=[common, partition],
                                   help="the producers a partition's leader knows")
    producers.set_defaults(run=run_describe_producers)
    abort = actions.add_parser("abort", parents=[common, partition],
                               help="abort the hanging transaction starting at an offset")
    abort.add_argument("--start-offset", type=int, required=True)
    abort.set_defaults(run=run_abort)


def run_list(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            listed = await TransactionAdmin(client).list_transactions()
        _print_table([("TransactionalId", "Coordinator", "ProducerId", "TransactionState")]
                     + [(t.transactional_id, t.coordinator_id, t.producer_id, t.state)
                        for t in listed])
        return 0
    return _run(go())


def run_describe(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            txn = await TransactionAdmin(client).describe(args.transactional_id)
        now = int(time.time() * 1000)
        started = txn.start_time_ms if txn.start_time_ms >= 0 else None
        _print_table([
            ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
             "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
             "TopicPartitions"),
            (txn.coordinator_id, txn.transactional_id, txn.producer_id, txn.producer_epoch,
             txn.state, txn.timeout_ms, _dash(started),
             _dash(now - started if started is not None else None),
             ",".join(f"{t}-{p}" for t, p in txn.partitions) or "-")])
        return 0
    return _run(go())


def run_describe_producers(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            producers = await TransactionAdmin(client).describe_producers(args.topic,
                                                                          args.partition)
        _print_table([("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                       "LastTimestamp", "CurrentTransactionStartOffset")]
                     + [(p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
                         p.last_timestamp, _dash(p.current_txn_start_offset
                                                 if p.current_txn_start_offset >= 0 else None))
                        for p in producers])
        return 0
    return _run(go())


def run_abort(args) -> int:
    async def go() -> int:
        async with _client(args) as client:
            producer = await TransactionAdmin(client).abort(args.topic, args.partition,
                                                            args.start_offset)
        print(f"Aborted the transaction of producer {producer.producer_id} (epoch "
              f"{producer.producer_epoch}) starting at offset {args.start_offset} of "
              f"{args.topic}-{args.partition}")
        return 0
    return _run(go())

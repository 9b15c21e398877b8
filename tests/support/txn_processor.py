"""An exactly-once read-process-write processor, run as its own process by
tests/faults/test_txn_eos.py and tests/cluster/test_txn_failover.py so
that a test can SIGKILL it mid-transaction:

    python -m tests.support.txn_processor BOOTSTRAP INPUT OUTPUT GROUP TXN_ID SEED [MAX_SECONDS]

confluent-kafka only: a read_committed consumer of INPUT in GROUP (offsets
committed only through the transactions, never by the consumer) and a
transactional producer with TXN_ID. Per transaction: read a batch, write
"out:<value>" for each record to the same partition of OUTPUT, send the
consumed offsets to the transaction, and commit, or, chosen by a random
generator seeded with SEED, abort (the records written first, so the
aborted data is in OUTPUT's log) and rewind to the last committed offsets.

The consumer uses assign() at the group's committed offsets rather than
subscribe(): a restarted instance with the same TXN_ID fences its
predecessor (init_transactions), which is what keeps the output exactly
once, and no rebalance waits for a killed member's session to expire.

Exit status: 0 once every input partition is consumed up to the end it
had at start (INPUT is filled before the processor runs), 3 when fenced
(or on another fatal error), 4 after MAX_SECONDS (default 120), 5 when one
client call outlived its timeout by far (``Watchdog``). Any other
error aborts the transaction and rewinds; a retriable one in a call outside
a transaction is retried. Progress goes to stdout, one line per commit.
"""
from __future__ import annotations

import faulthandler
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

BATCH_MIN, BATCH_MAX = 20, 120
ABORT_PROBABILITY = 0.2
# Per-call bound of the transactional calls: a broker being restarted
# answers within a few seconds; a call that still times out is retried.
CALL_TIMEOUT_S = 10.0
FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
EXIT_DONE, EXIT_FENCED, EXIT_OUT_OF_TIME, EXIT_STUCK = 0, 3, 4, 5
# Three times the per-call timeout: a call still inside the client then
# will not come back by itself.
STUCK_S = 3 * CALL_TIMEOUT_S


def log(message: str) -> None:
    print(f"{time.monotonic():.3f} {message}", flush=True)


class Fenced(Exception):
    pass


class Watchdog:
    """Ends the process when one client call runs past ``STUCK_S``.

    librdkafka 2.16's send_offsets_to_transaction was seen not returning
    for two minutes after the coordinator's broker was SIGKILLed, its
    10 s timeout notwithstanding, with two of three brokers up.
    Python cannot interrupt a call inside the client, so the processor
    logs where it is stuck and exits with EXIT_STUCK; the test starts a
    successor, which fences this instance as any restart does."""

    def __init__(self) -> None:
        self.call: tuple[str, float] | None = None
        threading.Thread(target=self._watch, daemon=True).start()

    @contextmanager
    def watching(self, name: str) -> Iterator[None]:
        self.call = (name, time.monotonic())
        try:
            yield
        finally:
            self.call = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            call = self.call
            if call is not None and time.monotonic() - call[1] > STUCK_S:
                log(f"stuck in {call[0]} for {time.monotonic() - call[1]:.0f}s")
                faulthandler.dump_traceback(all_threads=False)
                os._exit(EXIT_STUCK)


class Processor:
    def __init__(self, bootstrap: str, source: str, sink: str, group: str, transactional_id: str,
                 seed: int, deadline: float):
        self.source, self.sink, self.deadline = source, sink, deadline
        self.rng = random.Random(seed)
        self.watchdog = Watchdog()
        # No re-bootstrap when the one broker is down (librdkafka >= 2.10's
        # default): librdkafka 2.16 then kept a decommissioned broker handle
        # spinning in "Handle is terminating" and send_offsets_to_transaction
        # never returned, its timeout notwithstanding.
        common = {"bootstrap.servers": bootstrap, "metadata.recovery.strategy": "none"}
        self.consumer = Consumer({**common,
            "group.id": group, "isolation.level": "read_committed",
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
        self.producer = Producer({
            **common, "transactional.id": transactional_id, "linger.ms": 5,
            "transaction.timeout.ms": 30_000, "message.timeout.ms": 30_000,
            **({"debug": os.environ["TXN_PROCESSOR_DEBUG"]} if os.environ.get("TXN_PROCESSOR_DEBUG") else {})})
        self.partitions = sorted(self.retry(lambda: self.consumer.list_topics(
            source, timeout=CALL_TIMEOUT_S).topics[source].partitions))
        self.ends = {p: self.retry(lambda p=p: self.consumer.get_watermark_offsets(
            TopicPartition(source, p), timeout=CALL_TIMEOUT_S, cached=False))[1] for p in self.partitions}
        self.retry(lambda: self.producer.init_transactions(CALL_TIMEOUT_S))
        committed = self.retry(lambda: self.consumer.committed(
            [TopicPartition(source, p) for p in self.partitions], timeout=CALL_TIMEOUT_S))
        self.positions = {tp.partition: tp.offset if tp.offset >= 0 else 0 for tp in committed}
        log(f"started at {self.positions}, ends {self.ends}")
        self.consumer.assign([TopicPartition(source, p, self.positions[p] or OFFSET_BEGINNING)
                              for p in self.partitions])

    def retry(self, action):
        """``action()`` until it stops raising retriable or timeout errors."""
        while True:
            self.check_time()
            try:
                with self.watchdog.watching("a retried call"):
                    return action()
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() in FENCED_CODES or error.fatal():
                    raise Fenced(str(error)) from exc
                log(f"retrying after {error}")
                time.sleep(0.2)

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            log("out of time")
            sys.exit(EXIT_OUT_OF_TIME)

    def done(self) -> bool:
        return all(self.positions[p] >= self.ends[p] for p in self.partitions)

    def run(self) -> int:
        while not self.done():
            self.check_time()
            messages = [m for m in self.consumer.consume(self.rng.randint(BATCH_MIN, BATCH_MAX), 0.5)
                        if m.error() is None]
            if messages:
                self.transaction(messages)
        log("done")
        return EXIT_DONE

    def transaction(self, messages) -> None:
        """One transaction over ``messages``; on abort, rewind to the last commit."""
        abort = self.rng.random() < ABORT_PROBABILITY
        next_positions = dict(self.positions)
        try:
            self.producer.begin_transaction()
            for message in messages:
                self.producer.produce(self.sink, b"out:" + message.value(), message.key(),
                                      partition=message.partition())
                next_positions[message.partition()] = message.offset() + 1
            with self.watchdog.watching("send_offsets_to_transaction"):
                self.producer.send_offsets_to_transaction(
                    [TopicPartition(self.source, p, o) for p, o in next_positions.items()],
                    self.consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
            if abort:
                with self.watchdog.watching("flush"):
                    self.producer.flush(CALL_TIMEOUT_S)  # the aborted records reach the log
            else:
                self.commit()
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in FENCED_CODES or error.fatal():
                raise Fenced(str(error)) from exc
            log(f"aborting after {error}")
            abort = True
        if abort:
            self.abort_and_rewind()
            return
        self.positions = next_positions
        log(f"committed {sum(self.positions.values())} {self.positions}")

    def commit(self) -> None:
        """commit_transaction, retried while the outcome is unknown (librdkafka
        allows calling it again after a retriable error)."""
        while True:
            self.check_time()
            try:
                with self.watchdog.watching("commit_transaction"):
                    self.producer.commit_transaction(CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.retriable() and not error.txn_requires_abort():
                    log(f"commit retried after {error}")
                    continue
                raise

    def abort_and_rewind(self) -> None:
        self.retry(lambda: self.producer.abort_transaction(CALL_TIMEOUT_S))
        self.consumer.assign([TopicPartition(self.source, p, o or OFFSET_BEGINNING)
                              for p, o in self.positions.items()])
        log(f"aborted, rewound to {self.positions}")


def main(argv: list[str]) -> int:
    faulthandler.register(signal.SIGUSR1)  # a test that finds it stuck asks where
    bootstrap, source, sink, group, transactional_id, seed = argv[:6]
    max_seconds = float(argv[6]) if len(argv) > 6 else 120.0
    try:
        processor = Processor(bootstrap, source, sink, group, transactional_id, int(seed),
                              time.monotonic() + max_seconds)
        return processor.run()
    except Fenced as exc:
        log(f"fenced: {exc}")
        return EXIT_FENCED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

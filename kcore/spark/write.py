"""Writing a DataFrame's rows to topics, with Spark's Kafka sink columns.

Columns: ``value`` (required), ``key``, ``topic`` (or the ``topic``
option, which wins when both are given, as in Spark), ``partition``,
``headers`` (array of (key string, value binary)); key and value are
string or binary. Each task writes through one librdkafka producer
(idempotent: retries inside the task are not duplicated) and ends only
when every record is acknowledged or has failed; a failed delivery fails
the task with its error.

Transactional (the default): a task writes all of its rows inside one
Kafka transaction and commits it before ``write`` returns, so a
read_committed consumer sees a task's rows all at once or, when the task
fails, never (the task aborts its transaction). The task's
``transactional.id`` (``transactional_id``) is the same for every attempt
of it, so a retried attempt fences an earlier one still running (a
zombie) and aborts what it left open; a batch write's driver fences the
ids of the tasks that failed when the job is aborted, for attempts that
died before they could abort. A task with no rows opens no transaction.
Non-transactional (``kcore.transactional=false``): a retried task or
micro-batch writes its rows again, at least once, as Spark's Kafka sink.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kcore.spark.options import SinkOptions

log = logging.getLogger(__name__)

# Kafka's delivery.timeout.ms default (120 s): how long a record may wait
# for the cluster before its task fails; librdkafka's own is 300 s. It is
# capped at the transaction timeout (librdkafka refuses more).
DELIVERY_TIMEOUT_MS = 120_000
# transaction.timeout.ms unless kafka.transaction.timeout.ms says otherwise:
# five minutes, five times Kafka's producer default (60 s), because a task
# keeps its transaction open for all of its writing. It bounds how long an
# attempt that died with its transaction open holds read_committed readers
# of its partitions back when no retry or driver abort fences it sooner;
# the broker's transaction.max.timeout.ms (15 min) bounds it from above.
TRANSACTION_TIMEOUT_MS = 300_000
# Parallel producers fencing a failed write's transactional ids: each is
# one InitProducerId round trip, mostly waiting.
FENCING_THREADS = 8
# Rows queued before the producer is polled for delivery reports.
POLL_EVERY = 1000
# What a producer whose transactional id another producer took over (or
# whose transaction the coordinator timed out) gets.
FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
COLUMN_TYPES = {
    "key": (StringType, BinaryType), "value": (StringType, BinaryType),
    "topic": (StringType,), "partition": (IntegerType,), "headers": (ArrayType,)}


class SinkError(ValueError):
    """The DataFrame cannot be written to Kafka as it is."""


@dataclass(frozen=True)
class WriteCommit(WriterCommitMessage):
    """What a task reports to the driver: the records it wrote and the
    transactional id it committed them under (None: not transactional)."""

    records: int
    transactional_id: str | None = None


def transactional_id(prefix: str, write_id: str, partition: int) -> str:
    """``<prefix>-<write id>-<partition>``: the write id names the batch
    write or the streaming query, the partition the task within it."""
    return f"{prefix}-{write_id}-{partition}"


def check_schema(schema: StructType, options: SinkOptions) -> list[str]:
    """The Kafka columns of ``schema``, checked as Spark's KafkaWriter does."""
    fields = {field.name.lower(): field for field in schema.fields}
    if "value" not in fields:
        raise SinkError("required attribute 'value' not found")
    if options.topic is None and "topic" not in fields:
        raise SinkError("topic option required when no 'topic' attribute is present; use the topic "
                        "option to set a topic")
    for name, allowed in COLUMN_TYPES.items():
        if name in fields and not isinstance(fields[name].dataType, allowed):
            raise SinkError(f"{name} attribute type must be {' or '.join(t.typeName() for t in allowed)}, "
                            f"got {fields[name].dataType.simpleString()}")
    return [name for name in COLUMN_TYPES if name in fields]


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # bytearray from BinaryType


def _producer_config(options: SinkOptions, txn_id: str | None) -> dict[str, Any]:
    client = options.client
    config: dict[str, Any] = {"delivery.timeout.ms": DELIVERY_TIMEOUT_MS, **client.kafka_params,
                              "bootstrap.servers": client.bootstrap_servers, "enable.idempotence": True}
    if txn_id is not None:
        config.setdefault("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS)
        config["delivery.timeout.ms"] = min(int(config["delivery.timeout.ms"]),
                                            int(config["transaction.timeout.ms"]))
        config["transactional.id"] = txn_id
    return config


def _error(exc: KafkaException) -> KafkaError | None:
    error = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) else None


class RowWriter:
    """One task's producer and, with ``txn_id``, its one transaction (see
    the module doc). Not thread-safe."""

    def __init__(self, options: SinkOptions, columns: list[str], txn_id: str | None = None):
        self.options = options
        self.columns = columns
        self.txn_id = txn_id
        self._producer: Producer | None = None  # opened at the first row
        self._errors: list[str] = []
        self.records = 0

    def _delivered(self, error, message) -> None:
        if error is not None and len(self._errors) < 10:
            self._errors.append(f"{message.topic()}: {error.str()}")

    def write(self, rows: Iterable[Any], cut_short: Callable[[], bool] | None = None) -> WriteCommit:
        """Write ``rows``; ``cut_short`` says, once they are exhausted,
        whether they stopped because the task failed upstream (task_input.py),
        which aborts the transaction instead of committing a part."""
        try:
            for row in rows:
                producer = self._open() if self._producer is None else self._producer
                self._produce(producer, row)
                self.records += 1
                if self.records % POLL_EVERY == 0:
                    producer.poll(0)
                if self._errors:
                    break
            if (self._producer is not None and self.txn_id is not None and not self._errors
                    and cut_short is not None and cut_short()):
                raise RuntimeError(f"the task's rows from Spark stopped early after {self.records}: the task "
                                   f"failed before the writer; Kafka transaction {self.txn_id} is aborted")
            if self._producer is not None:
                self._producer.flush()  # returns once each record is acknowledged or failed
            if self._errors:
                raise RuntimeError(f"writing to Kafka failed: {'; '.join(self._errors)}")
            if self._producer is not None and self.txn_id is not None:
                self._commit(self._producer)
        except BaseException:
            self._abort()
            raise
        return WriteCommit(self.records, self.txn_id if self._producer is not None else None)

    def _open(self) -> Producer:
        """The producer; transactional: its id's earlier attempts fenced
        (init_transactions) and this task's transaction begun."""
        self._producer = Producer(_producer_config(self.options, self.txn_id))
        if self.txn_id is not None:
            try:
                self._producer.init_transactions(self.options.client.api_timeout_s)
                self._producer.begin_transaction()
            except KafkaException as exc:
                raise RuntimeError(f"starting Kafka transaction {self.txn_id}: {exc}") from None
        return self._producer

    def _commit(self, producer: Producer) -> None:
        """commit_transaction, again while its error is retriable (librdkafka's
        contract) within kafka.default.api.timeout.ms."""
        deadline = time.monotonic() + self.options.client.api_timeout_s
        while True:
            try:
                producer.commit_transaction(max(deadline - time.monotonic(), 1.0))
                return
            except KafkaException as exc:
                error = _error(exc)
                if error is not None and error.retriable() and time.monotonic() < deadline:
                    continue
                fenced = error is not None and error.code() in FENCED
                raise RuntimeError(f"committing Kafka transaction {self.txn_id}: {exc}"
                                   + ("; fenced by another attempt of this task, or aborted by the "
                                      "coordinator past kafka.transaction.timeout.ms" if fenced else "")) from None

    def _abort(self) -> None:
        """Abort the open transaction, if any: best effort, the task's own
        error is the one to report (a fenced producer cannot abort, and
        needs not: its fencer aborted for it)."""
        if self._producer is None or self.txn_id is None:
            return
        try:
            self._producer.abort_transaction(self.options.client.api_timeout_s)
        except KafkaException as exc:
            log.warning("aborting Kafka transaction %s: %s", self.txn_id, exc)

    def _produce(self, producer: Producer, row: Any) -> None:
        values = dict(zip(self.columns, (row[name] for name in self.columns)))
        topic = self.options.topic or values.get("topic")
        if topic is None:
            raise SinkError("null topic present in the data; use the topic option or a non-null topic column")
        arguments: dict[str, Any] = {"value": _bytes(values["value"]), "key": _bytes(values.get("key")),
                                     "on_delivery": self._delivered}
        if values.get("partition") is not None:
            arguments["partition"] = values["partition"]
        if values.get("headers"):
            arguments["headers"] = [(h[0], _bytes(h[1])) for h in values["headers"]]
        while True:
            try:
                producer.produce(topic, **arguments)
                return
            except BufferError:  # the local queue is full: wait for deliveries
                producer.poll(0.1)
            except KafkaException as exc:
                raise RuntimeError(f"writing to {topic}: {exc}") from None


def fence(options: SinkOptions, txn_ids: Sequence[str]) -> None:
    """Abort what these transactional ids left open: a producer that calls
    init_transactions with an id makes the coordinator abort the id's open
    transaction and fence its producer. Best effort and logged, for a
    driver whose write job is failing anyway."""
    def one(txn_id: str) -> None:
        try:
            Producer(_producer_config(options, txn_id)).init_transactions(options.client.api_timeout_s)
        except KafkaException as exc:
            log.warning("fencing Kafka transactional id %s: %s", txn_id, exc)

    with ThreadPoolExecutor(max_workers=FENCING_THREADS) as pool:
        list(pool.map(one, txn_ids))

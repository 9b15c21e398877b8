"""Writing a DataFrame's rows to topics, with Spark's Kafka sink columns.

Columns: ``value`` (required), ``key``, ``topic`` (or the ``topic``
option, which wins when both are given, as in Spark), ``partition``,
``headers`` (array of (key string, value binary)); key and value are
string or binary. Each task writes through one idempotent librdkafka
producer (``enable.idempotence``: retries inside the task are not
duplicated) and ends only when every record is acknowledged or has
failed, so a task that succeeds wrote all of its rows; a failed delivery
fails the task with its error. A retried task or micro-batch writes its
rows again (at least once, as Spark's Kafka sink); exactly once needs
transactions, which kcore does not serve yet.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, Producer
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kcore.spark.options import SinkOptions

# Kafka's delivery.timeout.ms default (120 s): how long a record may wait
# for the cluster before its task fails; librdkafka's own is 300 s.
DELIVERY_TIMEOUT_MS = 120_000
# Rows queued before the producer is polled for delivery reports.
POLL_EVERY = 1000
COLUMN_TYPES = {
    "key": (StringType, BinaryType), "value": (StringType, BinaryType),
    "topic": (StringType,), "partition": (IntegerType,), "headers": (ArrayType,)}


class SinkError(ValueError):
    """The DataFrame cannot be written to Kafka as it is."""


@dataclass(frozen=True)
class WriteCommit(WriterCommitMessage):
    """What a task reports to the driver: the records it wrote."""

    records: int


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


class RowWriter:
    """One task's producer (see the module doc). Not thread-safe."""

    def __init__(self, options: SinkOptions, columns: list[str]):
        self.options = options
        self.columns = columns
        client = options.client
        self._producer = Producer({
            "delivery.timeout.ms": DELIVERY_TIMEOUT_MS, **client.kafka_params,
            "bootstrap.servers": client.bootstrap_servers, "enable.idempotence": True})
        self._errors: list[str] = []
        self.records = 0

    def _delivered(self, error, message) -> None:
        if error is not None and len(self._errors) < 10:
            self._errors.append(f"{message.topic()}: {error.str()}")

    def write(self, rows: Iterable[Any]) -> WriteCommit:
        for row in rows:
            self._produce(row)
            self.records += 1
            if self.records % POLL_EVERY == 0:
                self._producer.poll(0)
            if self._errors:
                break
        self._producer.flush()  # returns once each record is acknowledged or failed
        if self._errors:
            raise RuntimeError(f"writing to Kafka failed: {'; '.join(self._errors)}")
        return WriteCommit(self.records)

    def _produce(self, row: Any) -> None:
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
                self._producer.produce(topic, **arguments)
                return
            except BufferError:  # the local queue is full: wait for deliveries
                self._producer.poll(0.1)
            except KafkaException as exc:
                raise RuntimeError(f"writing to {topic}: {exc}") from None

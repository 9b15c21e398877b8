"""The options of Spark's Kafka source and sink, read as Spark reads them.

Names (case-insensitive, as every Spark option): ``kafka.bootstrap.servers``;
one of ``subscribe`` (comma-separated topics), ``subscribePattern`` (a
regular expression) or ``assign`` (JSON ``{"topic":[0,1]}``);
``startingOffsets`` / ``endingOffsets`` ("earliest", "latest" or JSON
``{"topic":{"0":23,"1":-2}}`` where -2 is earliest and -1 latest);
``startingTimestamp`` / ``endingTimestamp`` (ms, every partition) and
``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp`` (JSON per
partition), which win over the offsets; ``failOnDataLoss`` (true);
``includeHeaders`` (false); ``minPartitions``; ``maxOffsetsPerTrigger``;
``kafkaConsumer.pollTimeoutMs`` (120000, Spark's default
spark.network.timeout); ``topic`` (sink). Every other ``kafka.*`` option
goes to librdkafka as it is (its names are Kafka's for the common ones),
except those Spark refuses too (``auto.offset.reset``, the deserializers,
``enable.auto.commit``, ``interceptor.classes``) and
``kafka.default.api.timeout.ms`` (Kafka's consumer default, 60000): how
long the driver waits for the cluster's metadata and offsets before it
fails the query with a sentence. Reads take ``kafka.isolation.level``
(read_uncommitted, the Java consumer's default that Spark inherits, where
librdkafka's own is read_committed). Writes are transactional unless
``kcore.transactional`` is false, each task with its own
``transactional.id`` under ``kcore.transactional.id.prefix`` (kcore's own
options: Spark's Kafka sink has no transactions), so the sink refuses
``kafka.transactional.id``.

Sources: apache/spark ``connector/kafka-0-10-sql`` KafkaSourceProvider
(names, defaults, validation) and the Structured Streaming + Kafka
integration guide.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EARLIEST = -2  # Spark's JSON offsets
LATEST = -1
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_API_TIMEOUT_MS = 60_000
STRATEGIES = ("subscribe", "subscribepattern", "assign")
REFUSED = {
    "kafka.auto.offset.reset": "set startingOffsets to 'earliest' or 'latest' instead: the query "
                               "keeps its offsets in its checkpoint",
    "kafka.key.deserializer": "keys are read as bytes; cast the key column",
    "kafka.value.deserializer": "values are read as bytes; cast the value column",
    "kafka.enable.auto.commit": "the query keeps its offsets in its checkpoint",
    "kafka.interceptor.classes": "interceptors could change the records",
}
OWN_KAFKA_KEYS = ("kafka.default.api.timeout.ms",)
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
DEFAULT_TRANSACTIONAL_ID_PREFIX = "kcore-spark"

# (topic, partition), as kcore/metadata.py has it; declared again because
# spark/ stands apart from the broker and imports nothing of kcore outside it.
TopicPartition = tuple[str, int]


class OptionError(ValueError):
    """An option is missing, unknown to Spark's Kafka source or malformed."""


@dataclass(frozen=True)
class Strategy:
    """Which partitions the query reads."""

    kind: str  # subscribe | subscribepattern | assign
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class OffsetLimit:
    """A starting or ending bound: earliest, latest, per-partition offsets
    (``offsets``, -2/-1 allowed) or timestamps (``timestamp`` for every
    partition, ``timestamps`` per partition)."""

    kind: str  # earliest | latest | offsets | timestamp | timestamps
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1
    timestamps: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientOptions:
    """What every client of a query gets: the brokers, librdkafka settings
    and the driver's wait for metadata."""

    bootstrap_servers: str
    kafka_params: dict[str, str]
    api_timeout_s: float


@dataclass(frozen=True)
class SourceOptions:
    client: ClientOptions
    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    poll_timeout_ms: int
    # The group id of the executors' consumers: never joined, never
    # committed to, only required by librdkafka.
    group_id: str
    # valueFormat avro/json: a registry_format.RegistryValueFormat, set by
    # the source after source_options (it asks the registry).
    value_format: Any = None


@dataclass(frozen=True)
class SinkOptions:
    client: ClientOptions
    topic: str | None
    # One Kafka transaction per task (write.py), or (false) the idempotent
    # producer alone.
    transactional: bool = True
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in options.items()}


def _client(opts: dict[str, str], checked: Mapping[str, str] | None = None) -> ClientOptions:
    """``checked``: librdkafka settings already read from their options."""
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        raise OptionError("option 'kafka.bootstrap.servers' must be specified")
    for key, reason in REFUSED.items():
        if key in opts:
            raise OptionError(f"Kafka option '{key[len('kafka.'):]}' is not supported: {reason}")
    params = {key[len("kafka."):]: value for key, value in opts.items()
              if key.startswith("kafka.") and key not in OWN_KAFKA_KEYS}
    params.update(checked or {})
    timeout_ms = _positive(opts, "kafka.default.api.timeout.ms") or DEFAULT_API_TIMEOUT_MS
    return ClientOptions(servers, params, timeout_ms / 1000)


def _positive(opts: dict[str, str], key: str) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key])
    except ValueError:
        raise OptionError(f"option '{key}' must be an integer, got {opts[key]!r}") from None
    if value <= 0:
        raise OptionError(f"option '{key}' must be positive, got {value}")
    return value


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    text = opts.get(key, str(default)).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"option '{key}' must be true or false, got {opts[key]!r}")
    return text == "true"


def _json(opts: dict[str, str], key: str) -> dict:
    try:
        value = json.loads(opts[key])
    except json.JSONDecodeError as exc:
        raise OptionError(f"option '{key}' is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise OptionError(f"option '{key}' must be a JSON object, got {opts[key]!r}")
    return value


def _per_partition(opts: dict[str, str], key: str) -> dict[TopicPartition, int]:
    """{"topic": {"0": 23}} -> {("topic", 0): 23}."""
    result: dict[TopicPartition, int] = {}
    for topic, partitions in _json(opts, key).items():
        if not isinstance(partitions, dict):
            raise OptionError(f"option '{key}': {topic!r} needs an object of partition: offset")
        for index, value in partitions.items():
            try:
                result[(topic, int(index))] = int(value)
            except (TypeError, ValueError):
                raise OptionError(f"option '{key}': {topic}-{index} -> {value!r} is not an integer") from None
    return result


def strategy(opts: dict[str, str]) -> Strategy:
    given = [key for key in STRATEGIES if key in opts]
    if len(given) != 1:
        raise OptionError("exactly one of the options subscribe, subscribePattern and assign "
                          f"must be specified, got {len(given)}")
    kind, value = given[0], opts[given[0]]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"no topics to subscribe to in option 'subscribe' ({value!r})")
        return Strategy(kind, topics=topics)
    if kind == "subscribepattern":
        if not value.strip():
            raise OptionError("option 'subscribePattern' is empty")
        return Strategy(kind, pattern=value.strip())
    assigned = _json(opts, "assign")
    try:
        pairs = tuple(sorted((topic, int(index)) for topic, indexes in assigned.items() for index in indexes))
    except (TypeError, ValueError):
        raise OptionError(f"option 'assign' must look like {{\"topic\":[0,1]}}, got {value!r}") from None
    return Strategy(kind, assigned=pairs)


def offset_limit(opts: dict[str, str], prefix: str, default: str) -> OffsetLimit:
    """``prefix`` is "starting" or "ending"; timestamps win over offsets."""
    if f"{prefix}timestamp" in opts:
        try:
            return OffsetLimit("timestamp", timestamp=int(opts[f"{prefix}timestamp"]))
        except ValueError:
            raise OptionError(f"option '{prefix}Timestamp' must be a long, "
                              f"got {opts[f'{prefix}timestamp']!r}") from None
    if f"{prefix}offsetsbytimestamp" in opts:
        return OffsetLimit("timestamps", timestamps=_per_partition(opts, f"{prefix}offsetsbytimestamp"))
    text = opts.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetLimit(text.lower())
    return OffsetLimit("offsets", offsets=_per_partition(opts, f"{prefix}offsets"))


def _check_batch_bounds(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if starting.kind == "latest" or LATEST in starting.offsets.values():
        raise OptionError("starting offset can't be latest for batch queries")
    if ending.kind == "earliest" or EARLIEST in ending.offsets.values():
        raise OptionError("ending offset can't be earliest for batch queries")
    if starting.kind == "offsets" and ending.kind == "offsets":
        if set(starting.offsets) != set(ending.offsets):
            raise OptionError("startingOffsets and endingOffsets name different partitions")
        for key, start in starting.offsets.items():
            end = ending.offsets[key]
            if start >= 0 and end >= 0 and start > end:
                raise OptionError(f"starting offset {start} of {key[0]}-{key[1]} is after its ending offset {end}")


def source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    opts = _lower(options)
    if streaming and ("endingoffsets" in opts or "endingtimestamp" in opts
                      or "endingoffsetsbytimestamp" in opts):
        raise OptionError("ending offsets are not valid in streaming queries")
    starting = offset_limit(opts, "starting", "latest" if streaming else "earliest")
    ending = offset_limit(opts, "ending", "latest")
    if not streaming:
        _check_batch_bounds(starting, ending)
    level = opts.get("kafka.isolation.level", ISOLATION_LEVELS[0]).strip().lower()
    if level not in ISOLATION_LEVELS:
        raise OptionError(f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, "
                          f"got {opts['kafka.isolation.level']!r}")
    client = _client(opts, {"isolation.level": level})
    return SourceOptions(
        client=client, strategy=strategy(opts), starting=starting, ending=ending,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        include_headers=_bool(opts, "includeheaders", False),
        min_partitions=_positive(opts, "minpartitions"),
        max_offsets_per_trigger=_positive(opts, "maxoffsetspertrigger"),
        poll_timeout_ms=_positive(opts, "kafkaconsumer.polltimeoutms") or DEFAULT_POLL_TIMEOUT_MS,
        group_id=client.kafka_params.get("group.id") or f"spark-kafka-source-{uuid.uuid4()}")


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    topic = opts.get("topic", "").strip() or None
    if "kafka.transactional.id" in opts:
        raise OptionError("Kafka option 'transactional.id' is not supported: each task writes with its own "
                          "id; set kcore.transactional.id.prefix instead")
    prefix = opts.get("kcore.transactional.id.prefix", DEFAULT_TRANSACTIONAL_ID_PREFIX).strip()
    if not prefix:
        raise OptionError("option 'kcore.transactional.id.prefix' is empty")
    return SinkOptions(_client(opts), topic, _bool(opts, "kcore.transactional", True), prefix)

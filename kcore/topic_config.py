"""Every topic config Kafka 3.9 defines, with Kafka's type, range, default
and broker-level synonyms (apache/kafka branch 3.9: ``LogConfig`` for the
keys, ``ServerTopicConfigSynonyms`` for the synonyms). Kafka 4.0 removed
``message.format.version`` and ``message.timestamp.difference.max.ms``
(KIP-724, KIP-937); kcore keeps them as Kafka 3.x does, so a topic set up
for a 3.x broker can be created here as it is (README.md, "Old message
formats").

A topic's value is its override, else the first of its broker synonyms
that is set (``log.retention.ms``, then ``log.retention.minutes``, then
``log.retention.hours``, converted to the topic's unit), else the last
synonym's default, else Kafka's default: the order of Kafka's
``ServerTopicConfigSynonyms``.

What kcore does with each key is in its ``doc`` (DescribeConfigs v3+
returns it). Two settings cannot be honoured and are refused with a reason:
tiered storage (``remote.storage.enable=true``, ``local.retention.*`` other
than -2). Keys honoured trivially, because kcore has no case where they
change anything, say so in their doc: ``message.format.version`` (always
v2, as Kafka 3.x with inter.broker.protocol.version >= 3.0),
``message.downconversion.enable`` (no Fetch version kcore serves needs
down-conversion) and the
``remote.log.*`` switches (no remote tier to copy to or delete from).

Beside Kafka's keys are the schema validation keys of Confluent Server
(``confluent.value.schema.validation``, ...) and Redpanda
(``redpanda.value.schema.id.validation``, ...), which the schema registry's
produce-path check reads (kcore/schema_registry/validation.py), and
kcore's own ``kcore.table.*`` keys, which write a topic as an Apache
Iceberg table (kcore/tables/, docs/tables.md).

Layer: beside kcore/config.py, below everything that reads topic configs;
data and pure functions only.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcore.config_def import (
    ConfigError,
    ConfigType,
    Validator,
    any_of,
    at_least,
    between,
    one_of,
    only,
)
from kcore.protocol.constants import INT64_MAX

BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT,
                                            ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST)
HOUR_MS, MINUTE_MS, DAY_MS = 3_600_000, 60_000, 86_400_000

# Kafka's BrokerCompressionType names (no "none": that is a producer codec name).
TOPIC_CODECS = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
NO_TIERED_STORAGE = ("kcore has no tiered storage (remote log storage): {name} can only be "
                     "{value}, and retention.ms / retention.bytes alone decide what is kept")


@dataclass(frozen=True)
class Synonym:
    """A broker key standing for a topic key, in ``unit`` topic units
    (log.roll.hours: 3,600,000 ms)."""

    name: str
    unit: int = 1


@dataclass(frozen=True)
class TopicConfigKey:
    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    synonyms: tuple[Synonym, ...] = ()
    # The stored form of a LIST value (kcore keeps lists as "a,b" text).
    canonical: Callable[[list[str]], str] = ",".join

    def parse(self, text: str) -> Any:
        try:
            return self.parse_value(text)
        except ValueError as exc:
            raise ConfigError(f"Invalid value {text} for configuration {self.name}: {exc}") \
                from None

    def parse_value(self, text: str) -> Any:
        """The typed value, or ValueError with the reason alone (a broker
        synonym parses its text with this too)."""
        value = self.type.parse(text)
        if self.validator is not None:
            self.validator(value)
        return self.canonical(value) if self.type is LIST else value


def _synonyms(*names: str, hours: str | None = None, minutes: str | None = None) -> tuple[Synonym, ...]:
    found = [Synonym(name) for name in names]
    if minutes:
        found.append(Synonym(minutes, MINUTE_MS))
    if hours:
        found.append(Synonym(hours, HOUR_MS))
    return tuple(found)


def _throttled_replicas(value: list[str]) -> None:
    """Kafka ``ThrottledReplicaListValidator``: '*' or partition:broker pairs."""
    if value == ["*"]:
        return
    for item in value:
        partition, _, broker = item.partition(":")
        if not (partition.isdigit() and broker.isdigit()):
            raise ValueError("must be the literal '*' or a list of replicas in the following "
                             "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _kafka_version(value: str) -> None:
    """Kafka ``MetadataVersionValidator``: a known release or its IV."""
    segments = value.split(".")
    key = value if len(segments) <= (3 if value.startswith("0.") else 2) \
        else ".".join(segments[:3 if value.startswith("0.") else 2])
    if key not in KAFKA_VERSIONS:
        raise ValueError(f"Version {value} is not a valid version")


def _kafka_versions() -> frozenset[str]:
    """MetadataVersion of Kafka 3.9: each release and its inter-broker
    versions (IV); "x.y" alone means the release's last IV."""
    releases = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3,
                "0.10.2": 1, "0.11.0": 3, "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2,
                "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3, "2.8": 2, "3.0": 2, "3.1": 1,
                "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1, "3.9": 1,
                "4.0": 2}
    return frozenset(list(releases) + [f"{release}-IV{n}" for release, count in releases.items()
                                       for n in range(count)])


KAFKA_VERSIONS = _kafka_versions()


def _throttled_replicas_key(side: str) -> TopicConfigKey:
    return TopicConfigKey(
        f"{side}.replication.throttled.replicas", LIST, "",
        f"Replicas ([partition]:[broker] or *) throttled on the {side} side: while out of the "
        f"ISR they replicate at most at the broker's {side}.replication.throttled.rate (no "
        f"limit by default).", _throttled_replicas)


def _local_retention_key(unit: str) -> TopicConfigKey:
    name = f"local.retention.{unit}"
    return TopicConfigKey(
        name, LONG, -2,
        f"Tiered storage: what stays on local disk once copied to remote storage. kcore has no "
        f"tiered storage, so only -2 (retention.{unit} decides) is accepted.",
        only(-2, NO_TIERED_STORAGE.format(name=name, value="-2")), _synonyms(f"log.{name}"))


def _cleanup_policy(items: list[str]) -> str:
    return ",".join(sorted(set(items)))


# Subject name strategies (Confluent's serializer classes; Redpanda takes their
# short names too): the subject whose ids a record may carry.
SUBJECT_NAME_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_STRATEGY_CLASS = "io.confluent.kafka.serializers.subject.{}"


def _schema_validation_keys() -> list[TopicConfigKey]:
    """Confluent Server's and Redpanda's topic configs for validation on
    produce (docs/schema-registry.md): records must carry a schema id
    registered under the subject the strategy names."""
    strategies = one_of(*SUBJECT_NAME_STRATEGIES, *(_STRATEGY_CLASS.format(name) for name in SUBJECT_NAME_STRATEGIES))
    keys = []
    for part in ("key", "value"):
        keys += [
            _k(f"confluent.{part}.schema.validation", BOOLEAN, False,
               f"Refuse (INVALID_RECORD, naming the record) a batch with a record whose {part} does not "
               f"carry a schema id registered under its subject (Confluent Server's name)."),
            _k(f"confluent.{part}.subject.name.strategy", STRING, _STRATEGY_CLASS.format("TopicNameStrategy"),
               f"The subject of a record's {part} for confluent.{part}.schema.validation: TopicNameStrategy "
               f"(<topic>-{part}), RecordNameStrategy (the schema's record name) or TopicRecordNameStrategy "
               f"(<topic>-<record name>).", strategies),
            _k(f"redpanda.{part}.schema.id.validation", BOOLEAN, False,
               f"Redpanda's name for confluent.{part}.schema.validation (either turns it on)."),
            _k(f"redpanda.{part}.subject.name.strategy", STRING, "TopicNameStrategy",
               f"Redpanda's name for confluent.{part}.subject.name.strategy, read when "
               f"redpanda.{part}.schema.id.validation turns validation on.", strategies),
        ]
    return keys


# How a topic's records become table rows (kcore/tables/rows.py).
TABLE_MODES = ("off", "key_value", "value_schema")
# Iceberg's time transforms of the record timestamp, or no partitioning.
TABLE_PARTITIONINGS = ("day", "hour", "month", "year", "none")


def _table_keys() -> list[TopicConfigKey]:
    """kcore's topics-as-tables keys (docs/tables.md)."""
    return [
        _k("kcore.table.mode", STRING, "off",
           "off, key_value or value_schema: the partition leader writes every committed record (below the "
           "last stable offset) to the Iceberg table kcore.<topic>: key_value as partition, offset, timestamp, "
           "key, value and headers columns; value_schema decodes each value through the schema registry "
           "into its schema's columns (records that do not decode go to kcore.<topic>~dlq).",
           one_of(*TABLE_MODES)),
        _k("kcore.table.commit.interval.ms", LONG, 60_000,
           "How often the table gets a snapshot of what was written since the last one; the table lags "
           "the log by about this much.", at_least(100)),
        _k("kcore.table.partition.by", STRING, "day",
           "The table's partitioning: the day, hour, month or year of the record timestamp, or none. "
           "Read when the table is created.", one_of(*TABLE_PARTITIONINGS)),
    ]


def _k(name: str, kind: ConfigType, default: Any, doc: str, validator: Validator | None = None,
       synonyms: tuple[Synonym, ...] = (), **options: Any) -> TopicConfigKey:
    return TopicConfigKey(name, kind, default, doc, validator, synonyms, **options)


TOPIC_KEYS: dict[str, TopicConfigKey] = {key.name: key for key in [
    _k("cleanup.policy", LIST, "delete",
       "delete drops segments past retention.ms / retention.bytes; compact keeps the latest "
       "record per key (the log cleaner); both do both; empty does neither.",
       one_of("compact", "delete"), _synonyms("log.cleanup.policy"), canonical=_cleanup_policy),
    _k("compression.gzip.level", INT, -1,
       "gzip level when compression.type=gzip makes the broker recompress (-1: zlib's 6).",
       any_of(between(1, 9), only(-1, "Value must be -1")), _synonyms("compression.gzip.level")),
    _k("compression.lz4.level", INT, 9,
       "lz4 level when compression.type=lz4 makes the broker recompress (9: LZ4's fast mode, "
       "other levels LZ4 HC).",
       between(1, 17), _synonyms("compression.lz4.level")),
    _k("compression.type", STRING, "producer",
       "Codec of the stored batches: producer keeps the producer's, any other is recompressed to.",
       one_of(*TOPIC_CODECS), _synonyms("compression.type")),
    _k("compression.zstd.level", INT, 3,
       "zstd level when compression.type=zstd makes the broker recompress.",
       between(-131072, 22), _synonyms("compression.zstd.level")),
    _k("delete.retention.ms", LONG, DAY_MS,
       "How long a compacted topic keeps tombstones and transaction markers after a cleaning "
       "pass first saw them (KIP-534 delete horizon).",
       at_least(0), _synonyms("log.cleaner.delete.retention.ms")),
    _k("file.delete.delay.ms", LONG, 60_000,
       "Delay between renaming a deleted segment to .deleted and removing its files.",
       at_least(0), _synonyms("log.segment.delete.delay.ms")),
    _k("flush.messages", LONG, INT64_MAX,
       "Messages between forced fsyncs; 1 acknowledges only data on disk (group commit).",
       at_least(1), _synonyms("log.flush.interval.messages")),
    _k("flush.ms", LONG, INT64_MAX,
       "Longest time written data waits in the page cache before an fsync.",
       at_least(0), _synonyms("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    _throttled_replicas_key("follower"),
    _k("index.interval.bytes", INT, 4096,
       "Bytes of batches between two entries of the sparse offset and time indexes.",
       at_least(0), _synonyms("log.index.interval.bytes")),
    _throttled_replicas_key("leader"),
    _local_retention_key("bytes"),
    _local_retention_key("ms"),
    _k("max.compaction.lag.ms", LONG, INT64_MAX,
       "A record of a compacted topic is compacted at most this long after it was written: a "
       "dirty segment this old is cleaned whatever min.cleanable.dirty.ratio says, and the "
       "active segment rolls at this age.",
       at_least(1), _synonyms("log.cleaner.max.compaction.lag.ms")),
    _k("max.message.bytes", INT, 1_048_588,
       "Largest record batch accepted, after compression (MESSAGE_TOO_LARGE above it).",
       at_least(0), _synonyms("message.max.bytes")),
    _k("message.downconversion.enable", BOOLEAN, True,
       "Whether fetches of old clients may be down-converted to message format v0/v1. "
       "Accepted; kcore serves Fetch v4+ only, which reads v2, so nothing is down-converted.",
       None, _synonyms("log.message.downconversion.enable")),
    _k("message.format.version", STRING, "3.0-IV1",
       "Deprecated message format (a Kafka version). Accepted and ignored, as Kafka 3.x does "
       "with inter.broker.protocol.version 3.0 or later: batches are always stored as v2.",
       _kafka_version, _synonyms("log.message.format.version")),
    _k("message.timestamp.after.max.ms", LONG, INT64_MAX,
       "With CreateTime, how far in the future a record's timestamp may be "
       "(INVALID_TIMESTAMP naming the record beyond it).",
       at_least(0), _synonyms("log.message.timestamp.after.max.ms")),
    _k("message.timestamp.before.max.ms", LONG, INT64_MAX,
       "With CreateTime, how far in the past a record's timestamp may be "
       "(INVALID_TIMESTAMP naming the record beyond it).",
       at_least(0), _synonyms("log.message.timestamp.before.max.ms")),
    _k("message.timestamp.difference.max.ms", LONG, INT64_MAX,
       "Deprecated (Kafka 3.6): the bound used for message.timestamp.before.max.ms and "
       "message.timestamp.after.max.ms while those are left at their default.",
       at_least(0), _synonyms("log.message.timestamp.difference.max.ms")),
    _k("message.timestamp.type", STRING, "CreateTime",
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's time.",
       one_of("CreateTime", "LogAppendTime"), _synonyms("log.message.timestamp.type")),
    _k("min.cleanable.dirty.ratio", DOUBLE, 0.5,
       "Share of a compacted log not yet cleaned at which the cleaner takes it.",
       between(0, 1), _synonyms("log.cleaner.min.cleanable.ratio")),
    _k("min.compaction.lag.ms", LONG, 0,
       "A record of a compacted topic stays uncompacted at least this long.",
       at_least(0), _synonyms("log.cleaner.min.compaction.lag.ms")),
    _k("min.insync.replicas", INT, 1,
       "In-sync replicas an acks=all produce needs (NOT_ENOUGH_REPLICAS below).",
       at_least(1), _synonyms("min.insync.replicas")),
    _k("preallocate", BOOLEAN, False,
       "Preallocate each new segment file to segment.bytes.",
       None, _synonyms("log.preallocate")),
    _k("remote.log.copy.disable", BOOLEAN, False,
       "Tiered storage: stop copying segments to remote storage. Accepted; kcore has no "
       "remote tier, so nothing is ever copied."),
    _k("remote.log.delete.on.disable", BOOLEAN, False,
       "Tiered storage: delete remote data when remote storage is turned off. Accepted; "
       "kcore has no remote tier, so there is nothing to delete."),
    _k("remote.storage.enable", BOOLEAN, False,
       "Tiered storage for this topic. kcore has no tiered storage: only false is accepted.",
       only(False, NO_TIERED_STORAGE.format(name="remote.storage.enable", value="false"))),
    _k("retention.bytes", LONG, -1,
       "Oldest segments are deleted while the partition is larger (-1: no size limit).",
       None, _synonyms("log.retention.bytes")),
    _k("retention.ms", LONG, 7 * DAY_MS,
       "Segments whose newest record is older are deleted (-1: kept forever).",
       at_least(-1), _synonyms("log.retention.ms", minutes="log.retention.minutes",
                               hours="log.retention.hours")),
    _k("segment.bytes", INT, 1 << 30,
       "The active segment rolls at this size.",
       at_least(14), _synonyms("log.segment.bytes")),
    _k("segment.index.bytes", INT, 10 << 20,
       "Size of a segment's offset and time index files; a full index rolls the segment.",
       at_least(4), _synonyms("log.index.size.max.bytes")),
    _k("segment.jitter.ms", LONG, 0,
       "Each new segment rolls up to this much (a random amount below "
       "min(segment.jitter.ms, segment.ms)) before segment.ms.",
       at_least(0), _synonyms("log.roll.jitter.ms", hours="log.roll.jitter.hours")),
    _k("segment.ms", LONG, 7 * DAY_MS,
       "The active segment rolls when its first record is this old.",
       at_least(1), _synonyms("log.roll.ms", hours="log.roll.hours")),
    _k("unclean.leader.election.enable", BOOLEAN, False,
       "Allow a replica outside the ISR to become leader (losing what it lacks).",
       None, _synonyms("unclean.leader.election.enable")),
    *_schema_validation_keys(),
    *_table_keys(),
]}


def parse_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Validate topic-level overrides one by one; ConfigError names
    the key (Kafka answers INVALID_CONFIG)."""
    parsed: dict[str, Any] = {}
    for name, text in configs.items():
        key = TOPIC_KEYS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if text is None:
            raise ConfigError(f"Null value for topic config {name}")
        parsed[name] = key.parse(text)
    return parsed


def check_combination(overrides: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Rules across keys, on a topic's effective values (Kafka
    ``LogConfig.validateValues``)."""
    values = {**defaults, **overrides}
    low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if low > high:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                               f"max.compaction.lag.ms ({high})")


def topic_defaults(broker_values: Mapping[str, Any]) -> dict[str, Any]:
    """Every topic key with the value a topic without overrides gets on a
    broker whose parsed config is ``broker_values`` (module docstring)."""
    return {name: default_from(key, broker_values) for name, key in TOPIC_KEYS.items()}


def default_from(key: TopicConfigKey, broker_values: Mapping[str, Any]) -> Any:
    for synonym in key.synonyms:
        value = broker_values.get(synonym.name)
        if value is not None:
            return _to_topic_form(key, value, synonym.unit)
    return key.default


def set_synonym(key: TopicConfigKey, broker_values: Mapping[str, Any]) -> Synonym | None:
    """The broker synonym whose value a topic without an override takes."""
    return next((s for s in key.synonyms if broker_values.get(s.name) is not None), None)


def _to_topic_form(key: TopicConfigKey, value: Any, unit: int) -> Any:
    if isinstance(value, list):
        return key.canonical(value)
    return value * unit if unit != 1 else value

"""kcore's topic config schema against Kafka's own, key for key."""
from __future__ import annotations

import pytest

from kcore.config import BrokerConfig, ConfigError, check_combination, parse_topic_configs
from kcore.config_def import ConfigType
from kcore.topic_config import TOPIC_KEYS

LONG_MAX = str(2**63 - 1)

# Every topic config of Kafka 3.9 with its type and default as DescribeConfigs
# prints it: apache/kafka branch 3.9 (commit c821449f, 3.9.0),
# storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java
# (the CONFIG definitions; defaults from ServerLogConfigs and QuotaConfigs).
KAFKA_3_9_TOPIC_CONFIGS = {
    "cleanup.policy": ("LIST", "delete"),
    "compression.gzip.level": ("INT", "-1"),
    "compression.lz4.level": ("INT", "9"),
    "compression.type": ("STRING", "producer"),
    "compression.zstd.level": ("INT", "3"),
    "delete.retention.ms": ("LONG", "86400000"),
    "file.delete.delay.ms": ("LONG", "60000"),
    "flush.messages": ("LONG", LONG_MAX),
    "flush.ms": ("LONG", LONG_MAX),
    "follower.replication.throttled.replicas": ("LIST", ""),
    "index.interval.bytes": ("INT", "4096"),
    "leader.replication.throttled.replicas": ("LIST", ""),
    "local.retention.bytes": ("LONG", "-2"),
    "local.retention.ms": ("LONG", "-2"),
    "max.compaction.lag.ms": ("LONG", LONG_MAX),
    "max.message.bytes": ("INT", "1048588"),
    "message.downconversion.enable": ("BOOLEAN", "true"),
    "message.format.version": ("STRING", "3.0-IV1"),
    "message.timestamp.after.max.ms": ("LONG", LONG_MAX),
    "message.timestamp.before.max.ms": ("LONG", LONG_MAX),
    "message.timestamp.difference.max.ms": ("LONG", LONG_MAX),
    "message.timestamp.type": ("STRING", "CreateTime"),
    "min.cleanable.dirty.ratio": ("DOUBLE", "0.5"),
    "min.compaction.lag.ms": ("LONG", "0"),
    "min.insync.replicas": ("INT", "1"),
    "preallocate": ("BOOLEAN", "false"),
    "remote.log.copy.disable": ("BOOLEAN", "false"),
    "remote.log.delete.on.disable": ("BOOLEAN", "false"),
    "remote.storage.enable": ("BOOLEAN", "false"),
    "retention.bytes": ("LONG", "-1"),
    "retention.ms": ("LONG", "604800000"),
    "segment.bytes": ("INT", "1073741824"),
    "segment.index.bytes": ("INT", "10485760"),
    "segment.jitter.ms": ("LONG", "0"),
    "segment.ms": ("LONG", "604800000"),
    "unclean.leader.election.enable": ("BOOLEAN", "false"),
}
# Beside Kafka's: validation on produce as Confluent Server names it (its
# documentation's topic configs) and as Redpanda does (rpk's topic
# properties), read by kcore's schema registry (docs/schema-registry.md).
SCHEMA_VALIDATION_CONFIGS = {
    f"{vendor}.{part}.{name}": value
    for part in ("key", "value")
    for vendor, name, value in (
        ("confluent", "schema.validation", ("BOOLEAN", "false")),
        ("confluent", "subject.name.strategy",
         ("STRING", "io.confluent.kafka.serializers.subject.TopicNameStrategy")),
        ("redpanda", "schema.id.validation", ("BOOLEAN", "false")),
        ("redpanda", "subject.name.strategy", ("STRING", "TopicNameStrategy")))}
# kcore's topics-as-tables keys (docs/tables.md).
TABLE_CONFIGS = {"kcore.table.mode": ("STRING", "off"), "kcore.table.commit.interval.ms": ("LONG", "60000"),
                 "kcore.table.partition.by": ("STRING", "day")}
TOPIC_CONFIGS = {**KAFKA_3_9_TOPIC_CONFIGS, **SCHEMA_VALIDATION_CONFIGS, **TABLE_CONFIGS}
# Kafka 4.0 removed these two (KIP-724, KIP-937); kcore keeps the 3.x set.
REMOVED_IN_KAFKA_4_0 = {"message.format.version", "message.timestamp.difference.max.ms"}


def test_the_topic_config_keys_are_kafka_3_9s_with_its_types_and_defaults():
    assert sorted(TOPIC_KEYS) == sorted(TOPIC_CONFIGS)
    described = {name: (key.type.name, ConfigType.render(key.default)) for name, key in TOPIC_KEYS.items()}
    assert described == TOPIC_CONFIGS
    assert REMOVED_IN_KAFKA_4_0 <= set(TOPIC_KEYS)


def test_a_broker_without_settings_gives_every_topic_kafkas_default():
    defaults = BrokerConfig().topic_defaults()
    assert {name: ConfigType.render(value) for name, value in defaults.items()} == \
        {name: default for name, (_, default) in TOPIC_CONFIGS.items()}


def test_broker_synonyms_set_topic_defaults_in_kafkas_order_and_units():
    defaults = BrokerConfig({"log.roll.jitter.hours": "2", "log.retention.minutes": "3",
                             "log.cleaner.max.compaction.lag.ms": "5000",
                             "log.message.timestamp.after.max.ms": "10",
                             "compression.zstd.level": "7"}).topic_defaults()
    assert defaults["segment.jitter.ms"] == 7_200_000
    assert defaults["retention.ms"] == 180_000
    assert (defaults["max.compaction.lag.ms"], defaults["message.timestamp.after.max.ms"]) == (5000, 10)
    assert defaults["compression.zstd.level"] == 7
    assert BrokerConfig({"log.roll.jitter.ms": "5", "log.roll.jitter.hours": "2"}) \
        .topic_defaults()["segment.jitter.ms"] == 5


@pytest.mark.parametrize("name, good, bad", [
    ("max.compaction.lag.ms", ["1", str(2**63 - 1)], ["0", str(2**63)]),
    ("segment.jitter.ms", ["0", "1000"], ["-1", "x"]),
    ("segment.index.bytes", ["4", str(2**31 - 1)], ["3", str(2**31)]),
    ("index.interval.bytes", ["0"], ["-1"]),
    ("message.timestamp.before.max.ms", ["0"], ["-1"]),
    ("message.timestamp.after.max.ms", ["3600000"], ["-5"]),
    ("message.timestamp.difference.max.ms", ["0"], ["-1"]),
    ("min.cleanable.dirty.ratio", ["0", "1", "0.25"], ["1.5", "-0.1"]),
    ("retention.ms", ["-1", "0"], ["-2"]),
    ("preallocate", ["TRUE", "false"], ["yes"]),
    ("compression.type", ["uncompressed", "zstd", "producer"], ["none", "brotli"]),
    ("compression.gzip.level", ["-1", "1", "9"], ["0", "10", "-2"]),
    ("compression.lz4.level", ["1", "17"], ["0", "18"]),
    ("compression.zstd.level", ["-131072", "22"], ["-131073", "23"]),
    ("cleanup.policy", ["compact", "delete,compact", ""], ["shred"]),
    ("leader.replication.throttled.replicas", ["*", "0:1,1:2", ""], ["0:x", "*,0:1"]),
    ("follower.replication.throttled.replicas", ["3:4"], ["3-4"]),
    ("message.format.version", ["3.0-IV1", "2.8", "0.10.0", "0.10.0-IV1", "3.9.0", "0.10.2.1"],
     ["3.10", "banana", "0.7"]),
    ("message.downconversion.enable", ["false"], ["0"]),
    ("remote.storage.enable", ["false"], ["true"]),
    ("local.retention.ms", ["-2"], ["-1", "1000"]),
    ("local.retention.bytes", ["-2"], ["0"]),
    ("remote.log.copy.disable", ["true"], ["maybe"]),
    ("unclean.leader.election.enable", ["true"], ["1"]),
])
def test_values_are_checked_with_kafkas_type_and_range(name, good, bad):
    for text in good:
        parse_topic_configs({name: text})
    for text in bad:
        with pytest.raises(ConfigError, match=name):
            parse_topic_configs({name: text})


def test_tiered_storage_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="kcore has no tiered storage"):
        parse_topic_configs({"remote.storage.enable": "true"})


def test_min_compaction_lag_may_not_exceed_the_max_on_the_effective_values():
    defaults = BrokerConfig({"log.cleaner.max.compaction.lag.ms": "1000"}).topic_defaults()
    check_combination(parse_topic_configs({"min.compaction.lag.ms": "1000"}), defaults)
    with pytest.raises(ConfigError, match=r"min.compaction.lag.ms \(1001\) > max.compaction.lag.ms"):
        check_combination(parse_topic_configs({"min.compaction.lag.ms": "1001"}), defaults)


def test_unknown_keys_are_refused_by_name():
    with pytest.raises(ConfigError, match="Unknown topic config name: retention.mss"):
        parse_topic_configs({"retention.mss": "1"})


def test_every_key_documents_what_kcore_does_with_it():
    for key in TOPIC_KEYS.values():
        assert key.doc.endswith(".") and len(key.doc) > 30, key.name

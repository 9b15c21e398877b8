"""Kafka's whole topic config set through the real clients' admin APIs,
and the configs whose effect a client can observe.

What Kafka 3.9 answers: every key of its LogConfig is accepted at
CreateTopics/AlterConfigs with its own range, described back with its
source (an override reads DYNAMIC_TOPIC_CONFIG, not default, not read-only);
a topic asking for tiered storage on a broker without it gets
INVALID_CONFIG; message.format.version is accepted and ignored."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigSource, NewTopic
from confluent_kafka.error import KafkaError
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import InvalidConfigurationError

from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.confluent import topic_configs as confluent_topic_configs
from tests.support.kafka_python import create_topic, topic_configs

# One valid, non-default value for each of Kafka 3.9's 36 topic configs
# (tests/unit/test_topic_config.py holds the list with Kafka's defaults),
# for the schema validation keys of Confluent Server and Redpanda, and for
# kcore's topics-as-tables keys.
EVERY_TOPIC_CONFIG = {
    "kcore.table.mode": "key_value",
    "kcore.table.commit.interval.ms": "5000",
    "kcore.table.partition.by": "hour",
    "confluent.key.schema.validation": "true",
    "confluent.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    "confluent.value.schema.validation": "true",
    "confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
    "redpanda.key.schema.id.validation": "true",
    "redpanda.key.subject.name.strategy": "RecordNameStrategy",
    "redpanda.value.schema.id.validation": "true",
    "redpanda.value.subject.name.strategy": "TopicRecordNameStrategy",
    "cleanup.policy": "compact,delete",
    "compression.gzip.level": "5",
    "compression.lz4.level": "12",
    "compression.type": "gzip",
    "compression.zstd.level": "10",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "2000",
    "flush.messages": "1000",
    "flush.ms": "60000",
    "follower.replication.throttled.replicas": "0:0",
    "index.interval.bytes": "8192",
    "leader.replication.throttled.replicas": "*",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "600000",
    "max.message.bytes": "500000",
    "message.downconversion.enable": "false",
    "message.format.version": "2.8",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "86400000",
    "message.timestamp.difference.max.ms": "100000000",
    "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.25",
    "min.compaction.lag.ms": "1000",
    "min.insync.replicas": "1",
    "preallocate": "true",
    "remote.log.copy.disable": "true",
    "remote.log.delete.on.disable": "true",
    "remote.storage.enable": "false",
    "retention.bytes": "10485760",
    "retention.ms": "3600000",
    "segment.bytes": "1048576",
    "segment.index.bytes": "65536",
    "segment.jitter.ms": "1000",
    "segment.ms": "3600000",
    "unclean.leader.election.enable": "true",
}




def test_librdkafka_sets_every_kafka_topic_config_and_describes_it_back(shared_broker):
    client, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-every-config")
    client.create_topics([NewTopic(topic, 1, 1, config=EVERY_TOPIC_CONFIG)])[topic].result(ADMIN_TIMEOUT_S)
    described = confluent_topic_configs(client, topic)
    assert sorted(described) == sorted(EVERY_TOPIC_CONFIG)
    for name, value in EVERY_TOPIC_CONFIG.items():
        entry = described[name]
        assert (entry.value, ConfigSource(entry.source)) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG), name
        assert not entry.is_default and not entry.is_read_only and not entry.is_sensitive, name


def test_kafka_python_sets_every_kafka_topic_config_and_describes_it_back(admin):
    topic = unique_topic("kp-every-config")
    create_topic(admin, topic, 1)
    defaults = topic_configs(admin, topic)
    assert sorted(defaults) == sorted(EVERY_TOPIC_CONFIG)
    assert all(entry["config_source"] == "DEFAULT_CONFIG" for entry in defaults.values())
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=EVERY_TOPIC_CONFIG)])
    described = topic_configs(admin, topic)
    for name, value in EVERY_TOPIC_CONFIG.items():
        entry = described[name]
        assert (entry["value"], entry["config_source"]) == (value, "DYNAMIC_TOPIC_CONFIG"), name
        assert not entry["read_only"], name


def test_librdkafka_gets_invalid_config_for_tiered_storage_with_the_reason(shared_broker):
    client, topic = admin_client(shared_broker.bootstrap), unique_topic("cf-tiered")
    future = client.create_topics([NewTopic(topic, 1, 1, config={"remote.storage.enable": "true"})])[topic]
    with pytest.raises(KafkaException) as error:
        future.result(ADMIN_TIMEOUT_S)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "no tiered storage" in error.value.args[0].str()


def test_kafka_python_gets_invalid_config_for_local_retention_and_a_lag_conflict(admin):
    for configs in ({"local.retention.ms": "3600000"},
                    {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"}):
        with pytest.raises(InvalidConfigurationError):
            create_topic(admin, unique_topic("kp-refused"), 1, configs)


def test_kafka_python_alter_configs_accepts_message_format_version_as_kafka_3_does(admin):
    topic = unique_topic("kp-format-version")
    create_topic(admin, topic, 1)

    def alter(value: str) -> str:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"message.format.version": value})
        return admin.alter_configs([resource], incremental=False)["topic"][topic]  # AlterConfigs (key 33)

    assert alter("0.10.2") == "OK"
    assert topic_configs(admin, topic)["message.format.version"]["value"] == "0.10.2"
    assert alter("banana").startswith("[Error 40] InvalidConfigurationError")

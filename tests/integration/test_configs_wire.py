"""DescribeConfigs v0-v4 and Produce v8 record errors, with exact requests:
what Kafka 3.9's ConfigHelper and LogValidator answer."""
from __future__ import annotations

import pytest

from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.topic_config import TOPIC_KEYS
from tests.support.wire import WireClient, create_topic, produce_body

TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
LONG_TYPE, LIST_TYPE, UNKNOWN_TYPE = 5, 7, 0


def describe(client: WireClient, version: int, resource_type: int, name: str, keys=None,
             documentation: bool = True):
    response = client.request(ApiKey.DESCRIBE_CONFIGS, version, {
        "resources": [{"resource_type": resource_type, "resource_name": name,
                       "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": documentation})
    result = response.results[0]
    assert result.error_code == ErrorCode.NONE, result.error_message
    return {c.name: c for c in result.configs}


@pytest.mark.parametrize("version", [3, 4])
def test_describe_configs_v3_and_v4_give_type_and_documentation_of_every_key(broker_factory, version):
    broker = broker_factory({"log.retention.ms": "7200000", "log.segment.bytes": "2097152"})
    client = WireClient(broker.port)
    create_topic(client, "d", configs={"max.compaction.lag.ms": "60000"})
    configs = describe(client, version, 2, "d")
    assert sorted(configs) == sorted(TOPIC_KEYS)
    lag = configs["max.compaction.lag.ms"]
    assert (lag.value, lag.config_source, lag.read_only, lag.config_type) == ("60000", TOPIC_CONFIG, False,
                                                                           LONG_TYPE)
    assert [(s.name, s.value, s.source) for s in lag.synonyms] == [
        ("max.compaction.lag.ms", "60000", TOPIC_CONFIG),
        ("log.cleaner.max.compaction.lag.ms", str(2**63 - 1), DEFAULT_CONFIG)]
    assert "dirty segment" in lag.documentation
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("2097152", STATIC_BROKER_CONFIG)
    assert [(s.name, s.source) for s in segment.synonyms] == [
        ("log.segment.bytes", STATIC_BROKER_CONFIG), ("log.segment.bytes", DEFAULT_CONFIG)]
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("7200000", STATIC_BROKER_CONFIG)
    assert [s.name for s in retention.synonyms] == ["log.retention.ms", "log.retention.hours"]
    assert configs["leader.replication.throttled.replicas"].config_type == LIST_TYPE
    assert "no tiered storage" in configs["remote.storage.enable"].documentation
    assert describe(client, version, 2, "d", documentation=False)["segment.ms"].documentation is None


def test_kafkas_synonym_order_hides_a_retention_set_in_hours(broker_factory):
    """Kafka drops the synonyms listed before the primary one (log.retention.ms),
    so retention.ms set through log.retention.hours reads as a default."""
    broker = broker_factory({"log.retention.hours": "1"})
    client = WireClient(broker.port)
    create_topic(client, "h")
    retention = describe(client, 2, 2, "h", ["retention.ms"])["retention.ms"]
    assert (retention.value, retention.config_source, retention.synonyms) == ("3600000", DEFAULT_CONFIG, [])
    hours = describe(client, 4, 4, "0", ["log.retention.hours"])["log.retention.hours"]
    assert (hours.value, hours.config_source, hours.read_only, hours.config_type) == (
        "1", STATIC_BROKER_CONFIG, True, UNKNOWN_TYPE)
    assert [(s.value, s.source) for s in hours.synonyms] == [("1", STATIC_BROKER_CONFIG),
                                                             ("168", DEFAULT_CONFIG)]


def test_describe_configs_v0_marks_defaults(broker):
    client = WireClient(broker.port)
    create_topic(client, "v0", configs={"segment.jitter.ms": "100"})
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 0, {"resources": [
        {"resource_type": 2, "resource_name": "v0", "configuration_keys": ["segment.jitter.ms", "segment.ms"]}]})
    assert [(c.name, c.value, c.is_default) for c in response.results[0].configs] == [
        ("segment.jitter.ms", "100", False), ("segment.ms", "604800000", True)]


def test_produce_v8_names_each_bad_record_and_v7_only_the_code(broker):
    client = WireClient(broker.port)
    create_topic(client, "c", configs={"cleanup.policy": "compact"})
    records = [record_codec.Record(key=None if i in (1, 4) else b"k", value=b"v", timestamp=1000)
               for i in range(6)]
    data = bytes(record_codec.build_batch(records))
    response = client.request(ApiKey.PRODUCE, 8, produce_body("c", 0, data))
    result = response.responses[0].partition_responses[0]
    assert (result.error_code, result.base_offset) == (ErrorCode.INVALID_RECORD, -1)
    assert [e.batch_index for e in result.record_errors] == [1, 4]
    assert all("cannot accept a record without a key" in e.batch_index_error_message
               for e in result.record_errors)
    assert result.error_message.startswith("2 of the batch's 6 records were rejected")
    response = client.request(ApiKey.PRODUCE, 7, produce_body("c", 0, data))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_RECORD

"""Dynamic broker configs on a single node (no ZooKeeper): set with
confluent-kafka's AdminClient and kcore's wire client, described with
their dynamic source, kept in the node's metadata file across a restart,
and refused with Kafka's error for a key that cannot change at runtime."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.cli import kcore_cli
from tests.support.wire import WireClient, batch, create_topic, produce

BROKER = 4
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG = 2, 3, 4
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


def set_config(admin: AdminClient, broker_id: int, key: str, value: str) -> None:
    resource = ConfigResource("broker", str(broker_id), incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def describe(admin: AdminClient, broker_id: int) -> dict:
    resource = ConfigResource("broker", str(broker_id))
    return admin.describe_configs([resource])[resource].result(timeout=30)


def wire_alter(client: WireClient, name: str, key: str, value: str | None, op: int = 0):
    response = client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {
        "resources": [{"resource_type": BROKER, "resource_name": name,
                       "configs": [{"name": key, "config_operation": op, "value": value}]}],
        "validate_only": False})
    return response.responses[0]


def wire_describe(client: WireClient, name: str) -> dict:
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": BROKER, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False})
    result = response.results[0]
    assert result.error_code == ErrorCode.NONE, result.error_message
    return {c.name: c for c in result.configs}


def test_dynamic_rate_is_described_as_dynamic_and_survives_a_restart(broker_factory):
    broker = broker_factory({FOLLOWER_RATE: "777"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    set_config(admin, 0, LEADER_RATE, "1000000")
    entry = describe(admin, 0)[LEADER_RATE]
    assert (entry.value, entry.source, entry.is_read_only) == (
        "1000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    static = describe(admin, 0)[FOLLOWER_RATE]
    assert (static.value, static.source) == ("777", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert describe(admin, 0)["log.dirs"].is_read_only
    assert not describe(admin, 0)["log.segment.bytes"].is_read_only  # a dynamic topic default
    stored = json.loads((broker.data_dir / "__cluster_metadata.json").read_text())
    assert stored["broker_configs"] == {"0": {LEADER_RATE: "1000000"}}
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    entry = describe(admin, 0)[LEADER_RATE]
    assert (entry.value, entry.source) == ("1000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_cluster_default_is_listed_under_the_empty_name_and_ranks_below_the_brokers_own(broker):
    client = WireClient(broker.port)
    assert wire_alter(client, "", FOLLOWER_RATE, "5000").error_code == ErrorCode.NONE
    assert wire_alter(client, "", LEADER_RATE, "6000").error_code == ErrorCode.NONE
    assert wire_alter(client, "0", LEADER_RATE, "7000").error_code == ErrorCode.NONE
    defaults = wire_describe(client, "")
    assert {name: (c.value, c.config_source) for name, c in defaults.items()} == {
        FOLLOWER_RATE: ("5000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        LEADER_RATE: ("6000", DYNAMIC_DEFAULT_BROKER_CONFIG)}
    own = wire_describe(client, "0")
    assert (own[FOLLOWER_RATE].value, own[FOLLOWER_RATE].config_source) == ("5000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    leader = own[LEADER_RATE]
    assert (leader.value, leader.config_source) == ("7000", DYNAMIC_BROKER_CONFIG)
    assert [(s.value, s.source) for s in leader.synonyms] == [
        ("7000", DYNAMIC_BROKER_CONFIG), ("6000", DYNAMIC_DEFAULT_BROKER_CONFIG), (str(2**63 - 1), 5)]
    assert wire_alter(client, "0", LEADER_RATE, None, op=1).error_code == ErrorCode.NONE
    assert wire_describe(client, "0")[LEADER_RATE].value == "6000"


def topic_entry(client: WireClient, topic: str, key: str):
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": [key]}],
        "include_synonyms": True, "include_documentation": False})
    return response.results[0].configs[0]


def test_a_dynamic_topic_default_applies_live_to_topics_without_their_own(broker_factory):
    broker = broker_factory()
    client = WireClient(broker.port)
    create_topic(client, "plain")
    create_topic(client, "own", configs={"max.message.bytes": "100000"})
    large = batch([b"v" * 5000])
    assert produce(client, "plain", large).error_code == ErrorCode.NONE
    assert wire_alter(client, "", "message.max.bytes", "2000").error_code == ErrorCode.NONE
    assert produce(client, "plain", large).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert produce(client, "own", large).error_code == ErrorCode.NONE  # its override stands
    entry = topic_entry(client, "plain", "max.message.bytes")
    assert (entry.value, entry.config_source) == ("2000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    broker.restart()
    client = WireClient(broker.port)
    assert produce(client, "plain", large).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert wire_alter(client, "", "message.max.bytes", None, op=1).error_code == ErrorCode.NONE
    assert produce(client, "plain", large).error_code == ErrorCode.NONE
    assert topic_entry(client, "plain", "max.message.bytes").config_source == 5


def test_alter_configs_replaces_the_whole_set_of_a_brokers_dynamic_values(broker):
    client = WireClient(broker.port)
    assert wire_alter(client, "0", FOLLOWER_RATE, "5000").error_code == ErrorCode.NONE
    response = client.request(ApiKey.ALTER_CONFIGS, 0, {"resources": [
        {"resource_type": BROKER, "resource_name": "0",
         "configs": [{"name": LEADER_RATE, "value": "9000"}]}], "validate_only": False})
    assert response.responses[0].error_code == ErrorCode.NONE
    configs = wire_describe(client, "0")
    assert (configs[LEADER_RATE].value, configs[LEADER_RATE].config_source) == ("9000", DYNAMIC_BROKER_CONFIG)
    assert configs[FOLLOWER_RATE].config_source == 5  # dropped: not in the new set
    response = client.request(ApiKey.ALTER_CONFIGS, 0, {"resources": [
        {"resource_type": BROKER, "resource_name": "0",
         "configs": [{"name": "num.partitions", "value": "3"}]}], "validate_only": False})
    assert response.responses[0].error_code == ErrorCode.INVALID_CONFIG
    assert wire_describe(client, "0")[LEADER_RATE].value == "9000"


def test_a_key_that_cannot_change_at_runtime_is_refused_with_kafkas_error(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(KafkaException) as refused:
        set_config(admin, 0, "broker.rack", "r1")
    error = refused.value.args[0]
    assert error.code() == ErrorCode.INVALID_CONFIG
    assert "Cannot update these configs dynamically: broker.rack" in error.str()
    client = WireClient(broker.port)
    assert wire_alter(client, "0", LEADER_RATE, "-5").error_code == ErrorCode.INVALID_CONFIG
    other = wire_alter(client, "3", LEADER_RATE, "5")
    assert other.error_code == ErrorCode.INVALID_REQUEST and "Unexpected broker id" in other.error_message
    assert wire_describe(client, "0")[LEADER_RATE].config_source == 5  # nothing was stored


def test_configs_command_alters_and_describes_a_broker(broker):
    done = kcore_cli("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers",
                     "--entity-name", "0", "--alter", "--add-config",
                     f"{LEADER_RATE}=1000,{FOLLOWER_RATE}=2000")
    assert done.returncode == 0, done.stderr
    done = kcore_cli("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers",
                     "--entity-name", "0", "--describe")
    assert done.returncode == 0, done.stderr
    assert f"  {FOLLOWER_RATE}=2000 source=DYNAMIC_BROKER_CONFIG read_only=false" in done.stdout
    assert f"  {LEADER_RATE}=1000 source=DYNAMIC_BROKER_CONFIG" in done.stdout
    refused = kcore_cli("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers",
                        "--entity-default", "--alter", "--add-config", "num.partitions=3")
    assert refused.returncode == 1 and "INVALID_CONFIG" in refused.stderr


def test_a_key_kcore_does_not_define_is_kept_and_described_back_as_kafka_keeps_custom_configs(broker_factory):
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    set_config(admin, 0, "confluent.plugin.setting", "on")
    client = WireClient(broker.port)
    assert wire_alter(client, "", "acme.audit.sink", "s3://bucket").error_code == ErrorCode.NONE
    assert wire_alter(client, "", "confluent.plugin.setting", "off").error_code == ErrorCode.NONE
    entry = describe(admin, 0)["confluent.plugin.setting"]
    assert (entry.value, entry.source, entry.is_read_only) == ("on", DYNAMIC_BROKER_CONFIG, False)
    wired = wire_describe(client, "0")["confluent.plugin.setting"]
    assert [(s.value, s.source) for s in wired.synonyms] == [
        ("on", DYNAMIC_BROKER_CONFIG), ("off", DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert describe(admin, 0)["acme.audit.sink"].source == DYNAMIC_DEFAULT_BROKER_CONFIG
    assert {n: c.value for n, c in wire_describe(client, "").items()} == {
        "acme.audit.sink": "s3://bucket", "confluent.plugin.setting": "off"}
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert describe(admin, 0)["confluent.plugin.setting"].value == "on"
    client = WireClient(broker.port)
    assert wire_alter(client, "0", "confluent.plugin.setting", None, op=1).error_code == ErrorCode.NONE
    assert describe(admin, 0)["confluent.plugin.setting"].value == "off"

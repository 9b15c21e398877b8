import socket

import pytest

from kcore.config import BrokerConfig, ConfigError, parse_properties, parse_topic_configs


def test_defaults_give_single_node_on_loopback_with_data_under_dot_data():
    config = BrokerConfig()
    assert config.listener_addresses() == [("PLAINTEXT", "127.0.0.1", 9092)]
    assert [str(p) for p in config.log_dirs] == ["data"]
    assert config["zookeeper.connect"] is None
    assert config["log.segment.bytes"] == 1073741824


def test_unknown_key_is_rejected_with_its_name():
    with pytest.raises(ConfigError, match="log.segmnt.bytes"):
        BrokerConfig({"log.segmnt.bytes": "10"})


def test_invalid_value_names_key_and_value():
    with pytest.raises(ConfigError, match=r"'abc'.*num.partitions"):
        BrokerConfig({"num.partitions": "abc"})
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig({"num.partitions": "0"})
    with pytest.raises(ConfigError, match="auto.create.topics.enable"):
        BrokerConfig({"auto.create.topics.enable": "yes"})


def test_bad_listener_is_rejected():
    with pytest.raises(ConfigError, match="listener"):
        BrokerConfig({"listeners": "127.0.0.1:9092"})


def test_properties_file_syntax(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# comment\n! also comment\nlog.dirs = /tmp/x\nnum.partitions: 4\n"
                    "listeners=PLAINTEXT://127.0.0.1:19092,\\\n  PLAINTEXT2://127.0.0.1:19093\n"
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,PLAINTEXT2:PLAINTEXT\n")
    config = BrokerConfig.load(path, ["num.partitions=8"])
    assert config["num.partitions"] == 8  # override wins over the file
    assert [str(p) for p in config.log_dirs] == ["/tmp/x"]
    assert len(config.listener_addresses()) == 2
    assert not config.is_default("log.dirs") and config.is_default("log.segment.bytes")


def test_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        BrokerConfig.load(tmp_path / "absent.properties")


def test_retention_resolution_prefers_ms_then_minutes_then_hours():
    assert BrokerConfig({"log.retention.hours": "1"}).retention_ms() == 3_600_000
    assert BrokerConfig({"log.retention.minutes": "2", "log.retention.hours": "1"}).retention_ms() == 120_000
    assert BrokerConfig({"log.retention.ms": "5", "log.retention.minutes": "2"}).retention_ms() == 5


def test_topic_defaults_follow_broker_synonyms():
    defaults = BrokerConfig({"log.segment.bytes": "1000", "compression.type": "zstd"}).topic_defaults()
    assert defaults["segment.bytes"] == 1000
    assert defaults["compression.type"] == "zstd"
    assert defaults["cleanup.policy"] == "delete"


def test_topic_configs_validated():
    assert parse_topic_configs({"retention.ms": "100", "cleanup.policy": "delete,compact"}) == {
        "retention.ms": 100, "cleanup.policy": "compact,delete"}
    with pytest.raises(ConfigError, match="retention.mss"):
        parse_topic_configs({"retention.mss": "1"})
    with pytest.raises(ConfigError, match="compression.type"):
        parse_topic_configs({"compression.type": "brotli"})


def test_parse_properties_handles_separators():
    assert parse_properties("a=1\nb : 2\nc 3\n") == {"a": "1", "b": "2", "c": "3"}


def test_advertised_listeners_are_published_as_written():
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092",
                           "advertised.listeners": "PLAINTEXT://localhost:9093"})
    assert config.advertised_endpoints() == [("PLAINTEXT", "localhost", 9093)]


def test_a_wildcard_listener_is_advertised_as_the_canonical_host_name():
    config = BrokerConfig({"listeners": "PLAINTEXT://0.0.0.0:9092,INTERNAL://:9093,LOCAL://localhost:9094",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
                                                             "LOCAL:PLAINTEXT"})
    name = socket.getfqdn()
    assert config.advertised_endpoints() == [("PLAINTEXT", name, 9092), ("INTERNAL", name, 9093),
                                             ("LOCAL", "localhost", 9094)]


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]", ""])
def test_an_advertised_wildcard_host_is_refused_at_start(host):
    with pytest.raises(ConfigError, match="advertised.listeners"):
        BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092",
                      "advertised.listeners": f"PLAINTEXT://{host}:9092"})

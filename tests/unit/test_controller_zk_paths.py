"""The ZooKeeper znodes' JSON is Kafka's (kafka.zk.ZkData), byte for byte
where Kafka's tools read it, and every encoder round-trips."""
import json
import uuid

from kcore.controller import zk_paths as paths
from kcore.metadata import BrokerInfo


def test_broker_registration_is_kafkas_version_5_json():
    broker = BrokerInfo(3, "10.0.0.7", 9093, rack="r2", broker_epoch=77)
    value = json.loads(paths.encode_broker(broker))
    assert value["version"] == 5 and value["endpoints"] == ["PLAINTEXT://10.0.0.7:9093"]
    assert (value["host"], value["port"], value["rack"], value["jmx_port"]) == ("10.0.0.7", 9093, "r2", -1)
    assert value["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert paths.decode_broker(3, paths.encode_broker(broker), 77) == broker


def test_a_kafka_written_broker_znode_is_read():
    kafka = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
             b'["PLAINTEXT://[::1]:9092"],"jmx_port":-1,"features":{},"host":"::1",'
             b'"timestamp":"1700000000000","port":9092,"version":5}')
    broker = paths.decode_broker(1, kafka, 42)
    assert (broker.host, broker.port, broker.rack, broker.broker_epoch) == ("::1", 9092, None, 42)


def test_topic_assignment_and_partition_state():
    topic_id = uuid.uuid4()
    data = paths.encode_assignment({1: [2, 3], 0: [1, 2]}, topic_id)
    value = json.loads(data)
    assert value["version"] == 3 and value["partitions"] == {"0": [1, 2], "1": [2, 3]}
    assert len(value["topic_id"]) == 22 and "=" not in value["topic_id"]
    assert paths.decode_assignment(data) == ({0: [1, 2], 1: [2, 3]}, topic_id)
    state = json.loads(paths.encode_partition_state(4, 2, 9, (2, 3)))
    assert state == {"version": 1, "controller_epoch": 4, "leader": 2, "leader_epoch": 9,
                     "isr": [2, 3]}
    assert paths.decode_partition_state(paths.encode_partition_state(4, 2, 9, (2, 3))) == (4, 2, 9, [2, 3])


def test_configs_controller_and_change_notifications():
    assert json.loads(paths.encode_topic_config({"retention.ms": "5"})) == {
        "version": 1, "config": {"retention.ms": "5"}}
    assert paths.decode_topic_config(b"") == {}
    assert paths.decode_controller(paths.encode_controller(7)) == 7
    assert paths.decode_cluster_id(paths.encode_cluster_id("abc")) == "abc"
    assert paths.decode_config_change(paths.encode_config_change("orders")) == "orders"
    assert paths.decode_config_change(b'{"version":2,"entity_path":"users/alice"}') is None
    assert paths.partition_state_path("t", 3) == "/brokers/topics/t/partitions/3/state"


def test_broker_registration_names_every_listener_and_its_protocol():
    broker = BrokerInfo(2, "10.0.0.8", 9094, listener="BROKERS",
                        endpoints=(("CLIENTS", "kafka.example.com", 9093), ("BROKERS", "10.0.0.8", 9094)),
                        security_protocols=(("CLIENTS", "SASL_SSL"), ("BROKERS", "SSL")))
    value = json.loads(paths.encode_broker(broker))
    assert value["endpoints"] == ["BROKERS://10.0.0.8:9094", "CLIENTS://kafka.example.com:9093"]
    assert value["listener_security_protocol_map"] == {"BROKERS": "SSL", "CLIENTS": "SASL_SSL"}
    decoded = paths.decode_broker(2, paths.encode_broker(broker), 5)
    assert (decoded.host, decoded.port, decoded.listener) == ("10.0.0.8", 9094, "BROKERS")
    assert decoded.endpoint("CLIENTS") == ("kafka.example.com", 9093)

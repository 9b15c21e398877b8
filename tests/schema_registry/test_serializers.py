"""confluent-kafka's serializers against the built-in registry, as an
application uses them: SchemaRegistryClient, AvroSerializer and
AvroDeserializer, JSONSerializer and JSONDeserializer, ProtobufSerializer
and ProtobufDeserializer, records produced to and consumed from the same
broker."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory, timestamp_pb2

from kcore.schema_registry import schema_types

ORDER_AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]})
ORDER_JSON = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
                         "type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
                         "required": ["id"]})
ORDER_PROTO = """syntax = "proto3";
package shop.serializers;
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  int32 qty = 2;
  google.protobuf.Timestamp at = 3;
}
"""


def round_trip(registry, topic: str, serializer, deserializer, values: list, expected: int | None = None) -> list:
    """Produce ``values`` serialized, consume the topic from its start
    deserialized (as many records as there are in it)."""
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap})
    for value in values:
        producer.produce(topic, serializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": registry.broker.bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    wanted = len(values) if expected is None else expected
    found: list = []
    try:
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is None or message.error():
                if len(found) == wanted:
                    break
                continue
            found.append(deserializer(message.value(), SerializationContext(topic, MessageField.VALUE)))
            if len(found) == wanted:
                break
    finally:
        consumer.close()
    return found


def test_avro_serializer_registers_and_deserializer_reads_back(registry, subject):
    topic = subject.removesuffix("-value")
    client = registry.client()
    values = [{"id": f"o{i}", "qty": i} for i in range(5)]
    serializer = AvroSerializer(client, ORDER_AVRO)
    found = round_trip(registry, topic, serializer, AvroDeserializer(registry.client()), values)
    assert found == values
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"
    payload = serializer(values[0], SerializationContext(topic, MessageField.VALUE))
    assert payload[0] == 0 and int.from_bytes(payload[1:5], "big") == latest.schema_id


def test_avro_evolution_with_the_serializers(registry, subject):
    topic = subject.removesuffix("-value")
    client = registry.client()
    round_trip(registry, topic, AvroSerializer(client, ORDER_AVRO), AvroDeserializer(client),
               [{"id": "a", "qty": 1}])
    evolved = json.loads(ORDER_AVRO)
    evolved["fields"].append({"name": "note", "type": ["null", "string"], "default": None})
    reader = AvroDeserializer(registry.client(), json.dumps(evolved))
    found = round_trip(registry, topic, AvroSerializer(client, json.dumps(evolved)), reader,
                       [{"id": "b", "qty": 2, "note": "x"}], expected=2)
    assert found == [{"id": "a", "qty": 1, "note": None}, {"id": "b", "qty": 2, "note": "x"}]
    broken = json.loads(ORDER_AVRO)
    broken["fields"][1]["type"] = "string"
    with pytest.raises(Exception, match="40901|incompatible"):
        AvroSerializer(client, json.dumps(broken))({"id": "c", "qty": "3"},
                                                   SerializationContext(topic, MessageField.VALUE))


def test_json_schema_serializer_round_trip(registry, subject):
    topic = subject.removesuffix("-value")
    values = [{"id": "j1", "qty": 4}, {"id": "j2"}]
    found = round_trip(registry, topic, JSONSerializer(ORDER_JSON, registry.client()),
                       JSONDeserializer(ORDER_JSON, schema_registry_client=registry.client()), values)
    assert found == values
    latest = registry.client().get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON" and json.loads(latest.schema.schema_str) == json.loads(ORDER_JSON)


def order_class():
    parsed = schema_types.parse("PROTOBUF", ORDER_PROTO)
    proto = parsed.proto
    proto.name = "shop/serializers/order.proto"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.serializers.Order"))


def test_protobuf_serializer_round_trip(registry, subject):
    topic = subject.removesuffix("-value")
    order = order_class()
    values = [order(id="p1", qty=2), order(id="p2", qty=7)]
    values[1].at.seconds = 1_700_000_000
    serializer = ProtobufSerializer(order, registry.client(), {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(order, {"use.deprecated.format": False})
    found = round_trip(registry, topic, serializer, deserializer, values)
    assert found == values
    latest = registry.client().get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert "message Order" in latest.schema.schema_str and "int32 qty = 2;" in latest.schema.schema_str


def test_schema_registry_client_api(registry, subject):
    client = registry.client()
    schema = Schema('{"type":"record","name":"Api","fields":[{"name":"a","type":"long"}]}', "AVRO")
    schema_id = client.register_schema(subject, schema)
    assert client.register_schema(subject, schema) == schema_id
    assert json.loads(client.get_schema(schema_id).schema_str) == json.loads(schema.schema_str)
    assert client.lookup_schema(subject, schema).version == 1
    assert client.get_versions(subject) == [1]
    assert client.set_compatibility(subject, "FULL") == {"compatibility": "FULL"}  # the answer as sent
    assert client.get_compatibility(subject) == "FULL"
    assert client.test_compatibility(subject, Schema(
        '{"type":"record","name":"Api","fields":[{"name":"a","type":"long"},{"name":"b","type":"int"}]}', "AVRO"))\
        is False
    assert client.delete_version(subject, 1) == 1
    with pytest.raises(SchemaRegistryError) as caught:
        client.get_version(subject, 1)
    assert caught.value.error_code == 40401
    assert client.delete_subject(subject, permanent=True) == [1]

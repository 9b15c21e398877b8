"""``kcore.table.mode=value_schema``: values written by Confluent's own
serializers (confluent-kafka's AvroSerializer, JSONSerializer and
ProtobufSerializer against the broker's registry) land in the schema's
columns, beside the record's metadata in the ``kcore`` struct; a second,
compatible Avro version adds its column to the table (old rows read
null); values that do not decode (no schema framing, an unknown schema
id, bytes the schema cannot read) go to ``kcore.<topic>~dlq`` with the
reason, and the writer goes on."""
from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.support import BrokerProcess, free_port
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S
from tests.support.tables import catalog_of, wait_for_offsets

TABLES_ON = {"kcore.table.mode": "value_schema", "kcore.table.commit.interval.ms": "300"}
ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "long"}]}
ORDER_V2 = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}
ORDER_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
              "properties": {"id": {"type": "string"}, "qty": {"type": "integer"},
                             "tags": {"type": "array", "items": {"type": "string"}}}}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    url = f"http://127.0.0.1:{free_port()}"
    process = BrokerProcess(tmp_path_factory.mktemp("tables-vs") / "data",
                            {"schema.registry.listeners": url, "http.listeners": ""}).start()
    process.registry_url = url
    yield process
    process.kill()


def create(broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=TABLES_ON)])[topic].result(ADMIN_TIMEOUT_S)


def send(broker, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value, key=b"k", partition=0)
    assert producer.flush(30) == 0


def rows_of(broker, name: str) -> list[dict]:
    rows = catalog_of(broker.data_dir).load_table(("kcore", name)).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: row["kcore"]["offset"] if "kcore" in row else row["offset"])


def test_avro_values_land_in_their_columns_and_a_new_version_adds_one(broker):
    topic = unique_topic("vs-avro")
    create(broker, topic)
    client = SchemaRegistryClient({"url": broker.registry_url})
    context = SerializationContext(topic, MessageField.VALUE)
    first = AvroSerializer(client, json.dumps(ORDER))
    send(broker, topic, [first({"id": f"o{i}", "qty": i}, context) for i in range(5)])
    wait_for_offsets(broker.data_dir, topic, {0: 5})
    second = AvroSerializer(client, json.dumps(ORDER_V2))
    send(broker, topic, [second({"id": "o5", "qty": 5, "note": "gift"}, context)])
    wait_for_offsets(broker.data_dir, topic, {0: 6})
    rows = rows_of(broker, topic)
    assert [(row["id"], row["qty"], row["note"]) for row in rows] == \
        [(f"o{i}", i, None) for i in range(5)] + [("o5", 5, "gift")]
    assert [row["kcore"]["offset"] for row in rows] == list(range(6))
    assert all(row["kcore"]["partition"] == 0 and row["kcore"]["key"] == b"k" for row in rows)


def test_values_that_do_not_decode_go_to_the_dead_letter_table(broker):
    topic = unique_topic("vs-dlq")
    create(broker, topic)
    client = SchemaRegistryClient({"url": broker.registry_url})
    serialize = AvroSerializer(client, json.dumps(ORDER))
    good = serialize({"id": "a", "qty": 1}, SerializationContext(topic, MessageField.VALUE))
    unknown_id = b"\x00" + struct.pack(">I", 987_654) + good[5:]
    truncated = good[:6]
    send(broker, topic, [good, b"not framed", unknown_id, truncated, good])
    wait_for_offsets(broker.data_dir, topic, {0: 5})
    assert [(row["kcore"]["offset"], row["id"]) for row in rows_of(broker, topic)] == [(0, "a"), (4, "a")]
    dead = rows_of(broker, f"{topic}~dlq")
    assert [(row["offset"], row["value"]) for row in dead] == [(1, b"not framed"), (2, unknown_id), (3, truncated)]
    reasons = [row["reason"] for row in dead]
    assert "magic" in reasons[0] and "987654" in reasons[1] and "AVRO" in reasons[2], reasons


def test_json_schema_and_protobuf_values_land_in_their_columns(broker):
    client = SchemaRegistryClient({"url": broker.registry_url})
    topic = unique_topic("vs-json")
    create(broker, topic)
    serialize = JSONSerializer(json.dumps(ORDER_JSON), client)
    context = SerializationContext(topic, MessageField.VALUE)
    send(broker, topic, [serialize({"id": "j1", "qty": 3, "tags": ["x", "y"]}, context),
                         serialize({"id": "j2"}, context)])
    wait_for_offsets(broker.data_dir, topic, {0: 2})
    assert [(row["id"], row["qty"], row["tags"]) for row in rows_of(broker, topic)] == \
        [("j1", 3, ["x", "y"]), ("j2", None, None)]

    topic = unique_topic("vs-proto")
    create(broker, topic)
    order = _proto_order_class()
    serialize = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    send(broker, topic, [serialize(order(id="p1", qty=7), context)])
    wait_for_offsets(broker.data_dir, topic, {0: 1})
    assert [(row["id"], row["qty"]) for row in rows_of(broker, topic)] == [("p1", 7)]


def _proto_order_class():
    """shop.tables.Order, built from its descriptor (no generated code)."""
    file = descriptor_pb2.FileDescriptorProto(name="shop_tables_order.proto", package="shop.tables",
                                              syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.tables.Order"))

"""The "kcore" Spark source decoding values through the built-in registry
(valueFormat=avro|json, schema.registry.url) in a real local[2] Spark:
values written with confluent-kafka's AvroSerializer under two versions
read with the latest version's columns (the older ones with the new
field's default), JSONSerializer values by the schema's properties, and
the errors a wrong setting or a value without a schema id give."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kcore.spark.options import OptionError
from kcore.spark.registry_format import value_format
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client

V1 = {"type": "record", "name": "Trade", "namespace": "spark",
      "fields": [{"name": "symbol", "type": "string"}, {"name": "quantity", "type": "long"},
                 {"name": "tags", "type": {"type": "map", "values": "int"}}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "venue", "type": ["null", "string"], "default": None},
                                      {"name": "legs", "type": {"type": "array", "items": {
                                          "type": "record", "name": "Leg",
                                          "fields": [{"name": "price", "type": "double"}]}}, "default": []}]}
JSON_SCHEMA = {"type": "object", "title": "Reading",
               "properties": {"sensor": {"type": "string"}, "celsius": {"type": "number"},
                              "ok": {"type": "boolean"}}}


def topic_of(subject: str) -> str:
    return subject.removesuffix("-value")


def produce(registry, topic: str, values: list[bytes | None]) -> None:
    admin = admin_client(registry.broker.bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(ADMIN_TIMEOUT_S)
    producer = Producer({"bootstrap.servers": registry.broker.bootstrap})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def load(spark, registry, topic: str, **options: str):
    reader = (spark.read.format("kcore").option("kafka.bootstrap.servers", registry.broker.bootstrap)
              .option("subscribe", topic).option("schema.registry.url", registry.url))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_avro_values_read_with_the_latest_versions_columns(spark, registry, subject):
    topic = topic_of(subject)
    context = SerializationContext(topic, MessageField.VALUE)
    old = AvroSerializer(registry.client(), json.dumps(V1))
    new = AvroSerializer(registry.client(), json.dumps(V2))
    values = [old({"symbol": "ABC", "quantity": 5, "tags": {"a": 1}}, context),
              new({"symbol": "XYZ", "quantity": 7, "tags": {}, "venue": "LSE",
                   "legs": [{"price": 1.5}, {"price": 2.5}]}, context),
              None]
    produce(registry, topic, values)
    frame = load(spark, registry, topic, valueFormat="avro")
    assert frame.schema["value"].dataType.simpleString() == \
        "struct<symbol:string,quantity:bigint,tags:map<string,int>,venue:string,legs:array<struct<price:double>>>"
    rows = frame.orderBy("offset").select("offset", "value.*").collect()
    assert [row.asDict(recursive=True) for row in rows] == [
        {"offset": 0, "symbol": "ABC", "quantity": 5, "tags": {"a": 1}, "venue": None, "legs": []},
        {"offset": 1, "symbol": "XYZ", "quantity": 7, "tags": {}, "venue": "LSE",
         "legs": [{"price": 1.5}, {"price": 2.5}]},
        {"offset": 2, "symbol": None, "quantity": None, "tags": None, "venue": None, "legs": None}]


def test_json_values_read_by_the_schemas_properties(spark, registry, subject):
    topic = topic_of(subject)
    serialize = JSONSerializer(json.dumps(JSON_SCHEMA), registry.client())
    context = SerializationContext(topic, MessageField.VALUE)
    produce(registry, topic, [serialize({"sensor": "s1", "celsius": 21.5, "ok": True}, context),
                              serialize({"sensor": "s2", "celsius": -3.0, "ok": False}, context)])
    rows = load(spark, registry, topic, valueFormat="json").orderBy("offset").select("value.*").collect()
    assert [tuple(row) for row in rows] == [("s1", 21.5, True), ("s2", -3.0, False)]


def test_wrong_settings_and_unframed_values_are_clear_errors(spark, registry, subject):
    topic = topic_of(subject)
    AvroSerializer(registry.client(), json.dumps(V1))(
        {"symbol": "A", "quantity": 1, "tags": {}}, SerializationContext(topic, MessageField.VALUE))
    produce(registry, topic, [b"plain bytes"])
    # The planner's checks, without a Spark job each: the options as Spark passes them.
    options = {"subscribe": topic, "schema.registry.url": registry.url}
    with pytest.raises(OptionError, match="'valueFormat' must be one of binary, avro, json"):
        value_format({**options, "valueFormat": "protobuf"})
    with pytest.raises(OptionError, match="holds a AVRO schema, not valueFormat=json"):
        value_format({**options, "valueFormat": "json"})
    with pytest.raises(OptionError, match="needs option 'schema.registry.url'"):
        value_format({"subscribe": topic, "valueFormat": "avro"})
    with pytest.raises(OptionError, match="'valueSubject' unless 'subscribe' names one topic"):
        value_format({**options, "subscribe": f"{topic},other", "valueFormat": "avro"})
    with pytest.raises(Exception, match="offset 0.*wire format"):
        load(spark, registry, topic, valueFormat="avro").collect()

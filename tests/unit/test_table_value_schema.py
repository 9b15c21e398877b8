"""Values decoded through their registered schema into Iceberg columns
(kcore/tables/value_schema.py): Confluent's framing as confluent-kafka
writes it, each Avro / JSON Schema / Protobuf type as a column and a
Python value, the values and schemas that give DecodeError, and rows
appended to a real pyiceberg table (SQLite catalog) and read back."""
from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
import warnings

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from google.protobuf import descriptor_pool, message_factory, timestamp_pb2
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from kcore.schema_registry.schema_types import AVRO, JSON, PROTOBUF, ResolvedReference
from kcore.tables.value_schema import (
    DecodeError,
    ValueSchema,
    body_of,
    message_indexes_of,
    schema_id_of,
    split_framing,
)

UTC = datetime.UTC


def framed(schema_id: int, payload: bytes, schema_type: str = AVRO, indexes: list[int] | None = None) -> bytes:
    """The value as confluent-kafka's serializers frame it."""
    header = SchemaId(schema_type, schema_id, message_indexes=indexes).id_to_bytes()
    return header + payload


def avro_schema(document: dict | str, references=()) -> ValueSchema:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # avro warns of the logical types it leaves to us
        return ValueSchema.parse(AVRO, json.dumps(document), references)


def avro_bytes(document: dict | str, value, named=None) -> bytes:
    """The Avro binary fastavro (not the avro library that decodes) writes."""
    stream = io.BytesIO()
    fastavro.schemaless_writer(stream, fastavro.parse_schema(document, named_schemas=named), value)
    return stream.getvalue()


def column_types(schema: ValueSchema) -> dict[str, object]:
    return {field.name: field.field_type for field in schema.iceberg_schema().fields}


def assert_arrow_takes(schema: ValueSchema, rows: list[dict]) -> list[dict]:
    return pa.Table.from_pylist(rows, schema=schema.arrow_schema()).to_pylist()


def record(name: str, *fields: tuple[str, object]) -> dict:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


# -- framing ----------------------------------------------------------------------
def test_framing_gives_the_schema_id_and_the_payload():
    value = framed(42, b"payload")
    assert schema_id_of(value) == 42
    assert body_of(value, AVRO) == b"payload"
    assert split_framing(value) == (42, b"payload")
    assert split_framing(framed(2**31 + 5, b""), JSON) == (2**31 + 5, b"")


@pytest.mark.parametrize("value, reason", [
    (None, "null"), (b"", "0 bytes"), (b"\x00\x00\x01", "3 bytes"), (b"\x01\x00\x00\x00\x07abc", "magic byte"),
])
def test_framing_refuses_null_short_and_foreign_values(value, reason):
    for read in (schema_id_of, body_of, message_indexes_of, lambda v: split_framing(v, PROTOBUF)):
        with pytest.raises(DecodeError, match=reason):
            read(value)


@pytest.mark.parametrize("indexes", [[0], [1], [0, 2], [3, 1, 70]])
def test_protobuf_message_indexes_are_skipped_as_confluent_writes_them(indexes):
    value = framed(7, b"\x08\x01", PROTOBUF, indexes)
    assert message_indexes_of(value) == tuple(indexes)
    assert split_framing(value, PROTOBUF) == (7, b"\x08\x01")
    assert body_of(value, AVRO) == value[5:]  # only Protobuf values carry indexes
    if indexes == [0]:
        assert value[5:] == b"\x00\x08\x01"


@pytest.mark.parametrize("tail", [b"", b"\x04", b"\x04\x02", b"\x02\xff", b"\x01", b"\x7f\x00"])
def test_protobuf_message_indexes_cut_short_or_negative_are_refused(tail):
    with pytest.raises(DecodeError, match="message ind"):
        body_of(b"\x00\x00\x00\x00\x01" + tail, PROTOBUF)


# -- Avro ----------------------------------------------------------------------------
PRIMITIVES = record("Primitives", ("b", "boolean"), ("i", "int"), ("l", "long"), ("f", "float"), ("d", "double"),
                    ("by", "bytes"), ("s", "string"), ("n", "null"))


def test_avro_primitives_become_their_iceberg_types_and_null_fields_no_column():
    schema = avro_schema(PRIMITIVES)
    assert column_types(schema) == {"b": BooleanType(), "i": IntegerType(), "l": LongType(), "f": FloatType(),
                                    "d": DoubleType(), "by": BinaryType(), "s": StringType()}
    assert all(not field.required for field in schema.iceberg_schema().fields)
    value = {"b": True, "i": -5, "l": 2**40, "f": 1.5, "d": 2.25, "by": b"\x00\xff", "s": "h\u00e9", "n": None}
    row = schema.decode(avro_bytes(PRIMITIVES, value))
    assert assert_arrow_takes(schema, [row]) == [{k: v for k, v in value.items() if k != "n"}]


NESTED = record(
    "Order",
    ("id", "long"),
    ("customer", record("Customer", ("name", "string"), ("tier", {"type": "enum", "name": "Tier",
                                                                  "symbols": ["GOLD", "SILVER"]}))),
    ("lines", {"type": "array", "items": record("Line", ("sku", "string"), ("qty", "int"))}),
    ("tags", {"type": "map", "values": "long"}),
    ("note", ["null", "string"]),
    ("discount", ["double", "null"]),
    ("hash", {"type": "fixed", "name": "Hash", "size": 4}),
    ("scores", {"type": "array", "items": ["null", "int"]}),
)


def test_avro_records_arrays_maps_enums_fixed_and_optional_unions():
    schema = avro_schema(NESTED)
    types = column_types(schema)
    assert isinstance(types["customer"], StructType)
    assert [(f.name, f.field_type) for f in types["customer"].fields] == [("name", StringType()),
                                                                         ("tier", StringType())]
    assert isinstance(types["lines"], ListType) and isinstance(types["lines"].element_type, StructType)
    assert isinstance(types["tags"], MapType)
    assert (types["tags"].key_type, types["tags"].value_type) == (StringType(), LongType())
    assert (types["note"], types["discount"], types["hash"]) == (StringType(), DoubleType(), BinaryType())
    ids = [field.field_id for field in schema.iceberg_schema()._lazy_id_to_field.values()]
    assert len(ids) == len(set(ids))
    value = {"id": 1, "customer": {"name": "ann", "tier": "SILVER"},
             "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 0}], "tags": {"x": 1, "y": -2},
             "note": None, "discount": 0.5, "hash": b"abcd", "scores": [1, None, 3]}
    row = schema.decode(avro_bytes(NESTED, value))
    assert row == value
    back = assert_arrow_takes(schema, [row])[0]
    assert back["tags"] == [("x", 1), ("y", -2)]
    assert back["customer"] == value["customer"] and back["lines"] == value["lines"]


def test_avro_union_of_two_types_and_recursive_records_have_no_columns():
    with pytest.raises(DecodeError, match=r"union \[string, long\] has no column"):
        avro_schema(record("U", ("either", ["string", "long"])))
    with pytest.raises(DecodeError, match=r"union \[null, string, long\]"):
        avro_schema(record("U", ("either", ["null", "string", "long"])))
    with pytest.raises(DecodeError, match="Node contains itself"):
        avro_schema(record("Node", ("value", "int"), ("next", ["null", "Node"])))


LOGICAL = record(
    "Logical",
    ("date", {"type": "int", "logicalType": "date"}),
    ("time_ms", {"type": "int", "logicalType": "time-millis"}),
    ("time_us", {"type": "long", "logicalType": "time-micros"}),
    ("ts_ms", {"type": "long", "logicalType": "timestamp-millis"}),
    ("ts_us", {"type": "long", "logicalType": "timestamp-micros"}),
    ("local_ms", {"type": "long", "logicalType": "local-timestamp-millis"}),
    ("local_us", {"type": "long", "logicalType": "local-timestamp-micros"}),
    ("price", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}),
    ("big", {"type": "fixed", "name": "Big", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0}),
    ("id", {"type": "string", "logicalType": "uuid"}),
    ("raw_id", {"type": "fixed", "name": "RawId", "size": 16, "logicalType": "uuid"}),
    ("maybe_day", ["null", {"type": "int", "logicalType": "date"}]),
)


def test_avro_logical_types_become_iceberg_dates_times_timestamps_decimals_and_uuids():
    schema = avro_schema(LOGICAL)
    assert column_types(schema) == {
        "date": DateType(), "time_ms": TimeType(), "time_us": TimeType(), "ts_ms": TimestamptzType(),
        "ts_us": TimestamptzType(), "local_ms": TimestampType(), "local_us": TimestampType(),
        "price": DecimalType(9, 2), "big": DecimalType(38, 0), "id": UUIDType(), "raw_id": UUIDType(),
        "maybe_day": DateType()}
    an_id, raw_id = uuid.uuid4(), uuid.uuid4()
    instant = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    value = {"date": datetime.date(2024, 2, 29), "time_ms": datetime.time(23, 59, 59, 999000),
             "time_us": datetime.time(0, 0, 0, 1), "ts_ms": instant.replace(microsecond=123000), "ts_us": instant,
             "local_ms": 1_714_979_289_123, "local_us": 1_714_979_289_123_456,
             "price": decimal.Decimal("-1234567.89"), "big": decimal.Decimal(10**37), "id": str(an_id),
             "raw_id": raw_id.bytes, "maybe_day": None}
    row = schema.decode(avro_bytes(LOGICAL, value))
    local = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    expected = {**value, "local_ms": local, "local_us": local.replace(microsecond=123456), "id": an_id,
                "raw_id": raw_id}
    assert row == expected
    back = assert_arrow_takes(schema, [row])[0]
    assert back["ts_us"] == instant and back["ts_ms"].tzinfo is not None
    assert back["local_us"] == expected["local_us"] and back["local_us"].tzinfo is None
    assert (back["price"], back["id"], back["raw_id"]) == (value["price"], an_id, raw_id)


def test_avro_decimal_wider_than_iceberg_is_refused():
    with pytest.raises(DecodeError, match="decimal"):
        avro_schema(record("D", ("d", {"type": "bytes", "logicalType": "decimal", "precision": 39})))


def test_avro_decimal_with_more_digits_than_its_precision_is_a_decode_error():
    schema = avro_schema(record("D", ("d", {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 1})))
    assert schema.decode(b"\x04\x03\xe7") == {"d": decimal.Decimal("99.9")}  # unscaled 999
    with pytest.raises(DecodeError, match=r"d: 1000 has more digits than decimal\(3, 1\)"):
        schema.decode(b"\x04\x27\x10")  # unscaled 10000


def test_avro_schema_that_is_not_a_record_is_one_value_column():
    schema = avro_schema({"type": "array", "items": "string"})
    assert column_types(schema) == {"value": ListType(1, StringType(), element_required=False)}
    assert schema.decode(avro_bytes({"type": "array", "items": "string"}, ["a", "b"])) == {"value": ["a", "b"]}
    optional = avro_schema(["null", "long"])
    assert optional.decode(avro_bytes(["null", "long"], None)) == {"value": None}
    with pytest.raises(DecodeError, match="no columns"):
        avro_schema("null")


def test_avro_schema_with_a_reference_uses_the_referenced_record():
    address = record("Address", ("city", "string"))
    reference = ResolvedReference("Address", AVRO, json.dumps(address))
    person = record("Person", ("name", "string"), ("home", "Address"))
    schema = avro_schema(person, [reference])
    assert isinstance(column_types(schema)["home"], StructType)
    payload = avro_bytes(person, {"name": "bo", "home": {"city": "Oslo"}}, named={"Address": address})
    assert schema.decode(payload) == {"name": "bo", "home": {"city": "Oslo"}}


@pytest.mark.parametrize("body, reason", [
    (b"", "does not decode as AVRO"),                         # nothing where a long is due
    (b"\x02", "does not decode as AVRO"),                     # string length 1, no byte
    (b"\x02a\x00\x04", "1 trailing bytes"),                   # a whole record, then more
    (b"\x02a\x08", "does not decode as AVRO"),                # union branch 4 of 2
])
def test_avro_bodies_that_do_not_fit_the_schema_are_decode_errors(body, reason):
    schema = avro_schema(record("R", ("s", "string"), ("o", ["null", "long"])))
    with pytest.raises(DecodeError, match=reason):
        schema.decode(body)


def test_avro_uuid_string_that_is_not_a_uuid_is_a_decode_error():
    document = record("R", ("id", {"type": "string", "logicalType": "uuid"}))
    schema = avro_schema(document)
    stream = io.BytesIO()
    fastavro.schemaless_writer(stream, fastavro.parse_schema(record("R", ("id", "string"))), {"id": "nope"})
    with pytest.raises(DecodeError, match="'nope' is not a UUID"):
        schema.decode(stream.getvalue())


# -- JSON Schema ----------------------------------------------------------------------
JSON_DOCUMENT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "active": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": ["integer", "null"]}}},
        "nickname": {"type": ["null", "string"]},
        "anything": {},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "free_object": {"type": "object"},
        "two_types": {"type": ["string", "integer"]},
        "owner": {"$ref": "#/definitions/person"},
    },
    "definitions": {"person": {"type": "object", "properties": {"id": {"type": "integer"}}}},
}


def json_schema(document: dict = JSON_DOCUMENT, references=()) -> ValueSchema:
    return ValueSchema.parse(JSON, json.dumps(document), references)


def test_json_schema_types_become_columns_and_the_rest_json_text():
    schema = json_schema()
    types = column_types(schema)
    assert {name: types[name] for name in ("name", "count", "ratio", "active", "nickname")} == {
        "name": StringType(), "count": LongType(), "ratio": DoubleType(), "active": BooleanType(),
        "nickname": StringType()}
    assert isinstance(types["tags"], ListType) and types["tags"].element_type == StringType()
    assert [(f.name, f.field_type) for f in types["address"].fields] == [("city", StringType()),
                                                                        ("zip", LongType())]
    assert [(f.name, f.field_type) for f in types["owner"].fields] == [("id", LongType())]
    for text_column in ("anything", "either", "free_object", "two_types"):
        assert types[text_column] == StringType()
    value = {"name": "a", "count": 3, "ratio": 1, "active": False, "tags": ["x", "y"],
             "address": {"city": "Rome", "extra": 1}, "nickname": None, "anything": {"k": [1, 2]},
             "either": 5, "free_object": {"a": "b"}, "two_types": "s", "owner": {"id": 9}, "unknown": 1}
    row = schema.decode(json.dumps(value).encode())
    assert row == {"name": "a", "count": 3, "ratio": 1.0, "active": False, "tags": ["x", "y"],
                   "address": {"city": "Rome", "zip": None}, "nickname": None, "anything": '{"k":[1,2]}',
                   "either": "5", "free_object": '{"a":"b"}', "two_types": '"s"', "owner": {"id": 9}}
    assert isinstance(row["ratio"], float)
    assert assert_arrow_takes(schema, [row, schema.decode(b"{}")])[0] == row


def test_json_integer_accepts_integral_numbers_only_within_a_long():
    schema = json_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert schema.decode(b'{"n": 2.0}') == {"n": 2}
    for body, reason in [(b'{"n": 2.5}', "expected an integer, found a number"),
                         (b'{"n": true}', "expected an integer, found a boolean"),
                         (b'{"n": 9223372036854775808}', "does not fit a long")]:
        with pytest.raises(DecodeError, match=reason):
            schema.decode(body)


@pytest.mark.parametrize("body, reason", [
    (b'{"name": 5}', "name: expected a string, found an integer"),
    (b'{"ratio": "1"}', "ratio: expected a number, found a string"),
    (b'{"active": 0}', "active: expected a boolean, found an integer"),
    (b'{"tags": "x"}', "tags: expected an array, found a string"),
    (b'{"tags": ["x", 1]}', "tags: expected a string, found an integer"),
    (b'{"address": {"zip": "z"}}', "address.zip: expected an integer, found a string"),
    (b'[1]', "expected an object, found an array"),
    (b'null', "decodes to null"),
    (b'{"name": ', "not JSON"),
    (b'\xff', "not JSON"),
    (b'{"name": "\\ud800"}', "lone UTF-16 surrogate"),
])
def test_json_values_of_the_wrong_type_are_decode_errors(body, reason):
    with pytest.raises(DecodeError, match=reason):
        json_schema().decode(body)


def test_json_surrogate_pairs_are_text():
    assert json_schema().decode(b'{"name": "\\ud83d\\ude00"}')["name"] == "\U0001f600"


def test_json_recursive_schema_is_json_text_where_it_recurs():
    document = {"type": "object", "properties": {"name": {"type": "string"},
                                                 "children": {"type": "array", "items": {"$ref": "#"}}}}
    schema = json_schema(document)
    children = column_types(schema)["children"]
    assert isinstance(children, ListType) and children.element_type == StringType()
    row = schema.decode(b'{"name": "r", "children": [{"name": "c", "children": []}]}')
    assert row == {"name": "r", "children": ['{"name":"c","children":[]}']}


def test_json_schema_with_a_reference_and_a_non_object_root():
    reference = ResolvedReference("point.json", JSON, json.dumps(
        {"type": "object", "properties": {"x": {"type": "number"}}}))
    schema = json_schema({"type": "object", "properties": {"at": {"$ref": "point.json"}}}, [reference])
    assert schema.decode(b'{"at": {"x": 1.5}}') == {"at": {"x": 1.5}}
    scalar = json_schema({"type": ["string", "null"]})
    assert column_types(scalar) == {"value": StringType()}
    assert scalar.decode(b'"s"') == {"value": "s"} and scalar.decode(b"null") == {"value": None}


# -- Protobuf -------------------------------------------------------------------------
PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  string customer = 2;
  double total = 3;
  float weight = 4;
  bool gift = 5;
  bytes blob = 6;
  uint32 small_unsigned = 7;
  uint64 big_unsigned = 8;
  sint32 delta = 9;
  Status status = 10;
  repeated Line lines = 11;
  repeated string tags = 12;
  map<string, int64> counts = 13;
  map<int32, Line> by_number = 14;
  Line first = 15;
  optional string note = 16;
  google.protobuf.Timestamp created = 17;
}
message Empty {}
message Node { string name = 1; repeated Node children = 2; }
"""


def protobuf_schema(indexes=(0,)) -> ValueSchema:
    return ValueSchema.parse(PROTOBUF, PROTO, message_indexes=indexes)


def protobuf_classes():
    """The message classes the protobuf library builds from the schema."""
    from kcore.schema_registry.schema_types import parse
    parsed = parse(PROTOBUF, PROTO)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(parsed.proto.SerializeToString())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"shop.{name}"))
            for name in ("Order", "Order.Line")}


def test_protobuf_fields_become_columns_and_decode():
    schema = protobuf_schema()
    types = column_types(schema)
    assert {name: types[name] for name in ("id", "customer", "total", "weight", "gift", "blob", "small_unsigned",
                                           "big_unsigned", "delta", "status", "note", "created")} == {
        "id": LongType(), "customer": StringType(), "total": DoubleType(), "weight": FloatType(),
        "gift": BooleanType(), "blob": BinaryType(), "small_unsigned": LongType(),
        "big_unsigned": DecimalType(20, 0), "delta": IntegerType(), "status": StringType(),
        "note": StringType(), "created": TimestamptzType()}
    assert isinstance(types["lines"], ListType) and isinstance(types["lines"].element_type, StructType)
    assert isinstance(types["by_number"], MapType) and types["by_number"].key_type == IntegerType()
    order_class = protobuf_classes()["Order"]
    order = order_class(id=7, customer="ann", total=9.5, weight=0.5, gift=True, blob=b"\x01", small_unsigned=2**32 - 1,
                        big_unsigned=2**64 - 1, delta=-3, status=1, tags=["a", "b"], counts={"x": 5})
    order.lines.add(sku="s1", qty=2)
    order.by_number[4].sku = "four"
    order.created.FromDatetime(datetime.datetime(2024, 1, 2, 3, 4, 5, 600000))
    row = schema.decode(order.SerializeToString())
    assert row == {"id": 7, "customer": "ann", "total": 9.5, "weight": 0.5, "gift": True, "blob": b"\x01",
                   "small_unsigned": 2**32 - 1, "big_unsigned": decimal.Decimal(2**64 - 1), "delta": -3,
                   "status": "PAID", "lines": [{"sku": "s1", "qty": 2}], "tags": ["a", "b"], "counts": {"x": 5},
                   "by_number": {4: {"sku": "four", "qty": 0}}, "first": None, "note": None,
                   "created": datetime.datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)}
    back = assert_arrow_takes(schema, [row])[0]
    assert back["by_number"] == [(4, {"sku": "four", "qty": 0})] and back["big_unsigned"] == 2**64 - 1


def test_protobuf_defaults_presence_and_unknown_enum_numbers():
    schema = protobuf_schema()
    order = protobuf_classes()["Order"](note="", status=5)
    row = schema.decode(order.SerializeToString())
    # proto3 scalars without presence read their default; optional ones and
    # messages read null when unset; an open enum keeps a number it cannot name.
    assert (row["id"], row["customer"], row["note"], row["first"], row["status"]) == (0, "", "", None, "5")


def test_protobuf_message_indexes_pick_the_message():
    line = protobuf_schema((0, 0))
    assert list(column_types(line)) == ["sku", "qty"]
    assert line.decode(protobuf_classes()["Order.Line"](sku="z", qty=1).SerializeToString()) == {"sku": "z", "qty": 1}
    with pytest.raises(DecodeError, match="name no message"):
        protobuf_schema((5,))
    with pytest.raises(DecodeError, match="no columns"):
        protobuf_schema((1,))
    with pytest.raises(DecodeError, match="shop.Node contains itself"):
        protobuf_schema((2,))


def test_protobuf_bytes_that_do_not_parse_are_decode_errors():
    with pytest.raises(DecodeError, match="does not decode as PROTOBUF"):
        protobuf_schema().decode(b"\x0a\x05ab")  # a 5-byte field with 2 bytes


def test_schema_that_does_not_parse_is_a_decode_error():
    with pytest.raises(DecodeError, match="Invalid schema"):
        ValueSchema.parse(AVRO, "{not json")


# -- a real table ----------------------------------------------------------------------
@pytest.fixture
def catalog(tmp_path):
    catalog = load_catalog("kcore", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("kcore")
    return catalog


def table_with(catalog, *schemas: ValueSchema):
    """A table of offsets, as the writer makes one, with the value columns
    merged in by name (the table gives them ids of its own)."""
    table = catalog.create_table(("kcore", "t"), schema=Schema(NestedField(1, "offset", LongType(), required=False)))
    for schema in schemas:
        with table.update_schema() as update:
            update.union_by_name(schema.iceberg_schema())
    return table


def appended(table, schema: ValueSchema, rows: list[dict]) -> None:
    table.append(pa.Table.from_pylist(rows, schema=schema.arrow_schema()))


def read_back(table) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "offset"} for row in table.scan().to_arrow().to_pylist()]


def test_avro_rows_append_to_an_iceberg_table_and_read_back(catalog):
    schema = avro_schema(LOGICAL)
    table = table_with(catalog, schema)
    value = {"date": datetime.date(2020, 1, 1), "time_ms": datetime.time(1, 2, 3), "time_us": datetime.time(4),
             "ts_ms": datetime.datetime(2021, 1, 1, tzinfo=UTC), "ts_us": datetime.datetime(2022, 1, 1, tzinfo=UTC),
             "local_ms": 0, "local_us": 1, "price": decimal.Decimal("0.01"), "big": decimal.Decimal(1),
             "id": str(uuid.UUID(int=1)), "raw_id": uuid.UUID(int=2).bytes, "maybe_day": datetime.date(2000, 1, 1)}
    rows = [schema.decode(avro_bytes(LOGICAL, value))]
    appended(table, schema, rows)
    assert rows[0]["local_ms"] == datetime.datetime(1970, 1, 1)
    assert read_back(table) == rows


def test_nested_avro_rows_append_and_read_back(catalog):
    schema = avro_schema(NESTED)
    table = table_with(catalog, schema)
    row = schema.decode(avro_bytes(NESTED, {
        "id": 1, "customer": {"name": "n", "tier": "GOLD"}, "lines": [{"sku": "a", "qty": 1}], "tags": {"k": 2},
        "note": "x", "discount": None, "hash": b"1234", "scores": [None, 1]}))
    appended(table, schema, [row])
    assert read_back(table) == [{**row, "tags": [("k", 2)]}]


def test_json_rows_append_to_an_iceberg_table_and_read_back(catalog):
    schema = json_schema()
    table = table_with(catalog, schema)
    rows = [schema.decode(b'{"name": "a", "tags": ["t"], "address": {"city": "c", "zip": 1}, "either": [1],'
                          b' "owner": {"id": 2}}'), schema.decode(b"{}")]
    appended(table, schema, rows)
    assert read_back(table) == rows


def test_protobuf_rows_append_to_an_iceberg_table_and_read_back(catalog):
    schema = protobuf_schema()
    table = table_with(catalog, schema)
    order = protobuf_classes()["Order"](id=1, big_unsigned=2**63, counts={"a": 1}, note="n")
    order.by_number[1].qty = 3
    order.created.FromDatetime(datetime.datetime(2024, 1, 1))
    row = schema.decode(order.SerializeToString())
    appended(table, schema, [row])
    assert read_back(table) == [{**row, "counts": [("a", 1)], "by_number": [(1, {"sku": "", "qty": 3})]}]


def test_an_added_optional_avro_field_merges_and_old_rows_read_null(catalog):
    first = record("User", ("name", "string"), ("age", "int"))
    second = {**first, "fields": first["fields"] + [{"name": "email", "type": ["null", "string"], "default": None},
                                                    {"name": "visits", "type": {"type": "array", "items": "long"},
                                                     "default": []}]}
    old, new = avro_schema(first), avro_schema(second)
    table = table_with(catalog, old)
    appended(table, old, [old.decode(avro_bytes(first, {"name": "a", "age": 1}))])
    with table.update_schema() as update:
        update.union_by_name(new.iceberg_schema())
    appended(table, new, [new.decode(avro_bytes(second, {"name": "b", "age": 2, "email": "b@x", "visits": [3]}))])
    assert [field.name for field in table.schema().fields] == ["offset", "name", "age", "email", "visits"]
    assert sorted(read_back(table), key=lambda row: row["name"]) == [
        {"name": "a", "age": 1, "email": None, "visits": None},
        {"name": "b", "age": 2, "email": "b@x", "visits": [3]}]

"""Schema evolution per type, with the cases Confluent's documentation
gives ("Schema Evolution and Compatibility"): which changes each of
BACKWARD (the new schema reads old data) and FORWARD (the old schema reads
new data) accepts, for Avro, JSON Schema and Protobuf
(kcore/schema_registry/*_schema.py, json_diff.py, protobuf_diff.py)."""
from __future__ import annotations

import json

import pytest

from kcore.schema_registry import schema_types
from kcore.schema_registry.errors import RegistryError


def avro(*fields: dict, name: str = "User") -> schema_types.ParsedSchema:
    return schema_types.parse("AVRO", json.dumps({"type": "record", "name": name, "namespace": "com.example",
                                                  "fields": list(fields)}))


def backward(old: schema_types.ParsedSchema, new: schema_types.ParsedSchema) -> bool:
    return not new.backward_errors(old)


def forward(old: schema_types.ParsedSchema, new: schema_types.ParsedSchema) -> bool:
    return not old.backward_errors(new)


ID = {"name": "id", "type": "string"}
AGE_OPTIONAL = {"name": "age", "type": ["null", "int"], "default": None}
AGE_REQUIRED = {"name": "age", "type": "int"}

# (case, old, new, backward compatible, forward compatible)
AVRO_CASES = [
    ("add a field with a default", avro(ID), avro(ID, AGE_OPTIONAL), True, True),
    ("add a field without a default", avro(ID), avro(ID, AGE_REQUIRED), False, True),
    ("delete a field without a default", avro(ID, AGE_REQUIRED), avro(ID), True, False),
    ("delete a field with a default", avro(ID, AGE_OPTIONAL), avro(ID), True, True),
    ("promote int to long", avro({"name": "n", "type": "int"}), avro({"name": "n", "type": "long"}), True, False),
    ("change int to string", avro({"name": "n", "type": "int"}), avro({"name": "n", "type": "string"}),
     False, False),
    ("make a field nullable", avro({"name": "n", "type": "int"}),
     avro({"name": "n", "type": ["null", "int"], "default": None}), True, False),
    ("rename the record", avro(ID), avro(ID, name="Person"), False, False),
]


@pytest.mark.parametrize("case,old,new,is_backward,is_forward", AVRO_CASES, ids=[c[0] for c in AVRO_CASES])
def test_avro_evolution_follows_avro_resolution(case, old, new, is_backward, is_forward):
    assert backward(old, new) is is_backward
    assert forward(old, new) is is_forward


def test_avro_enum_symbols_added_are_backward_but_not_forward_compatible():
    old = schema_types.parse("AVRO", '{"type":"enum","name":"Color","symbols":["RED","GREEN"]}')
    new = schema_types.parse("AVRO", '{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}')
    assert backward(old, new)
    errors = old.backward_errors(new)
    assert errors and "MISSING_ENUM_SYMBOLS" in errors[0] and "BLUE" in errors[0]


def test_avro_incompatibility_names_the_field_and_its_location():
    errors = avro(ID, AGE_REQUIRED).backward_errors(avro(ID))
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in errors[0]
    assert "'age'" in errors[0] and "/fields/1" in errors[0]


def test_avro_canonical_text_ignores_formatting_and_primitive_spelling():
    spaced = schema_types.parse("AVRO", '{ "type" : "record", "name" : "U",\n "fields" : '
                                        '[ { "name" : "a", "type" : { "type" : "string" } } ] }')
    compact = schema_types.parse("AVRO", '{"type":"record","name":"U","fields":[{"name":"a","type":"string"}]}')
    assert spaced.canonical == compact.canonical == \
        '{"type":"record","name":"U","fields":[{"name":"a","type":"string"}]}'


@pytest.mark.parametrize("text", ['{"type":"record","name":"U"}', '{"type":"nope"}', "not json",
                                  '{"type":"record","name":"U","fields":[{"name":"a","type":"Missing"}]}'])
def test_invalid_avro_is_42201(text):
    with pytest.raises(RegistryError) as caught:
        schema_types.parse("AVRO", text)
    assert caught.value.error_code == 42201 and caught.value.status == 422


def json_schema(document: dict) -> schema_types.ParsedSchema:
    return schema_types.parse("JSON", json.dumps(document))


OPEN = {"type": "object", "properties": {"id": {"type": "string"}}}
CLOSED = {**OPEN, "additionalProperties": False}


def with_property(model: dict, name: str, schema: dict, required: bool = False) -> dict:
    document = {**model, "properties": {**model["properties"], name: schema}}
    if required:
        document["required"] = [name]
    return document


JSON_CASES = [
    ("add a property to an open content model", OPEN, with_property(OPEN, "age", {"type": "integer"}),
     False, True),
    ("add an optional property to a closed content model", CLOSED,
     with_property(CLOSED, "age", {"type": "integer"}), True, False),
    ("add a required property to a closed content model", CLOSED,
     with_property(CLOSED, "age", {"type": "integer"}, required=True), False, False),
    ("remove a property from an open content model", with_property(OPEN, "age", {"type": "integer"}), OPEN,
     True, False),
    ("widen integer to number", {"type": "integer"}, {"type": "number"}, True, False),
    ("make a string nullable", {"type": "string"}, {"type": ["string", "null"]}, True, False),
    ("lower maxLength", {"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5}, False, True),
    ("extend an enum", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True, False),
    ("change the type", {"type": "string"}, {"type": "integer"}, False, False),
]


@pytest.mark.parametrize("case,old,new,is_backward,is_forward", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_schema_evolution_follows_confluents_rules(case, old, new, is_backward, is_forward):
    assert backward(json_schema(old), json_schema(new)) is is_backward
    assert forward(json_schema(old), json_schema(new)) is is_forward


def test_json_schema_incompatibility_is_named_as_confluent_names_it():
    errors = json_schema(OPEN).backward_errors(json_schema(with_property(OPEN, "age", {"type": "integer"})))
    assert errors == []
    errors = json_schema(with_property(OPEN, "age", {"type": "integer"})).backward_errors(json_schema(OPEN))
    assert len(errors) == 1 and "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in errors[0]
    assert "#/properties/age" in errors[0]


def test_json_schema_refs_are_followed_on_both_sides():
    old = {"definitions": {"age": {"type": "integer"}}, "type": "object",
           "properties": {"age": {"$ref": "#/definitions/age"}}}
    new = {"definitions": {"age": {"type": "string"}}, "type": "object",
           "properties": {"age": {"$ref": "#/definitions/age"}}}
    assert not backward(json_schema(old), json_schema(new))


def test_json_schema_with_a_reference_resolves_it():
    address = schema_types.ResolvedReference("address.json", "JSON", '{"type":"object"}')
    parsed = schema_types.parse("JSON", '{"properties":{"home":{"$ref":"address.json"}}}', [address])
    assert parsed.canonical == '{"properties":{"home":{"$ref":"address.json"}}}'
    with pytest.raises(RegistryError) as caught:
        schema_types.parse("JSON", '{"properties":{"home":{"$ref":"address.json"}}}')
    assert caught.value.error_code == 42201


@pytest.mark.parametrize("text", ['{"type":"nope"}', '{"minLength":"x"}', "[1,2]", "{"])
def test_invalid_json_schema_is_42201(text):
    with pytest.raises(RegistryError) as caught:
        schema_types.parse("JSON", text)
    assert caught.value.error_code == 42201


ORDER = """syntax = "proto3";
package shop;
message Order {
  string id = 1;
  int32 quantity = 2;
  repeated string tags = 3;
  Status status = 4;
  enum Status { NEW = 0; PAID = 1; }
}
message Refund { string order_id = 1; }
"""


def proto(text: str) -> schema_types.ParsedSchema:
    return schema_types.parse("PROTOBUF", text)


PROTOBUF_CASES = [
    ("add a field", "  int32 quantity = 2;\n", "  int32 quantity = 2;\n  string note = 9;\n", True, True),
    ("remove a field", "  int32 quantity = 2;\n", "", True, True),
    ("rename a field", "int32 quantity = 2;", "int32 amount = 2;", True, True),
    ("int32 to int64 (same wire type)", "int32 quantity = 2;", "int64 quantity = 2;", True, True),
    ("int32 to string", "int32 quantity = 2;", "string quantity = 2;", False, False),
    ("int32 to sint32 (zigzag)", "int32 quantity = 2;", "sint32 quantity = 2;", False, False),
    ("a number becomes repeated", "int32 quantity = 2;", "repeated int32 quantity = 2;", False, False),
    ("a string stops being repeated", "repeated string tags = 3;", "string tags = 3;", True, True),
    ("remove a message", "message Refund { string order_id = 1; }\n", "", False, True),
    ("add an enum constant", "PAID = 1; }", "PAID = 1; SHIPPED = 2; }", True, True),
]


@pytest.mark.parametrize("case,before,after,is_backward,is_forward", PROTOBUF_CASES,
                         ids=[c[0] for c in PROTOBUF_CASES])
def test_protobuf_evolution_follows_confluents_rules(case, before, after, is_backward, is_forward):
    assert before in ORDER
    old, new = proto(ORDER), proto(ORDER.replace(before, after))
    assert backward(old, new) is is_backward
    assert forward(old, new) is is_forward


def test_protobuf_required_field_added_is_incompatible():
    old = proto('syntax = "proto2";\nmessage A { optional string a = 1; }')
    new = proto('syntax = "proto2";\nmessage A { optional string a = 1; required int32 b = 2; }')
    errors = new.backward_errors(old)
    assert errors and "REQUIRED_FIELD_ADDED" in errors[0]


def test_protobuf_text_and_serialized_descriptor_are_one_schema():
    parsed = proto(ORDER)
    serialized = parsed.render("serialized")
    assert proto(serialized).canonical == parsed.canonical
    assert proto(parsed.canonical).canonical == parsed.canonical
    assert parsed.record_name() == "shop.Order"


def test_protobuf_well_known_types_resolve_without_references():
    parsed = proto('syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
                   'message Event { google.protobuf.Timestamp at = 1; }')
    assert ".google.protobuf.Timestamp at = 1;" in parsed.canonical


def test_protobuf_reference_is_imported_by_its_name():
    money = schema_types.ResolvedReference("money.proto", "PROTOBUF",
                                           'syntax = "proto3";\npackage pay;\nmessage Money { int64 cents = 1; }')
    parsed = schema_types.parse("PROTOBUF", 'syntax = "proto3";\nimport "money.proto";\n'
                                            'message Price { pay.Money amount = 1; }', [money])
    assert ".pay.Money amount = 1;" in parsed.canonical


@pytest.mark.parametrize("text", ["message A { Missing x = 1; }", "message A {", "syntax = \"proto4\";",
                                  "message A { int32 x = 1; int32 y = 1; }"])
def test_invalid_protobuf_is_42201(text):
    with pytest.raises(RegistryError) as caught:
        proto(text)
    assert caught.value.error_code == 42201


def test_unknown_schema_type_is_42201():
    with pytest.raises(RegistryError) as caught:
        schema_types.parse("XML", "<a/>")
    assert caught.value.error_code == 42201

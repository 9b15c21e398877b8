"""Cross-checks every message schema against kafka-python's own encoders.

kafka-python 3 ships two independent implementations of the wire format:
classes generated from Kafka's JSON message specs (``kafka.protocol.*``) and
the older hand-written per-version structs (``kafka.protocol.old``). For
every served api and version, random values are encoded by kcore and by
kafka-python and the bytes must be identical; each side must decode the
other's bytes to the same fields.
"""
from __future__ import annotations

import importlib
import inspect
import io
import pkgutil

import kafka.protocol
import kafka.protocol.old
import pytest
from hypothesis import HealthCheck, given, settings
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.old.api import Request as OldRequest
from kafka.protocol.old.api import Response as OldResponse
from kafka.protocol.old.types import BitField as OldBitField
from kafka.protocol.old.types import Schema as OldSchema

from kcore.protocol import decode_struct, encode_struct, to_dict
from kcore.protocol.schema import Struct
from tests.support.protocol_specs import LOCAL_SPECS
from tests.support.protocol_strategies import all_message_versions, in_version, normalize, values

CASES = all_message_versions()
CROSS_CHECK = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _json_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or "generate_stubs" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, ApiMessage) and getattr(cls, "_json", None):
                found[name] = cls
    return found


def _old_classes() -> dict[tuple[int, str, int], type]:
    found = {}
    for info in pkgutil.iter_modules(kafka.protocol.old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and issubclass(cls, (OldRequest, OldResponse))):
                continue
            version = cls.__dict__.get("API_VERSION")
            if isinstance(version, int) and isinstance(getattr(cls, "API_KEY", None), int):
                kind = "Request" if issubclass(cls, OldRequest) else "Response"
                found[(cls.API_KEY, kind, version)] = cls
    return found


JSON_CLASSES = _json_classes()
OLD_CLASSES = _old_classes()


def _their_name(fields: dict, name: str) -> str:
    # kafka-python renames the *_authorized_operations fields (json_patch).
    if name not in fields and name.endswith("_authorized_operations"):
        return "authorized_operations"
    return name


def _bits_to_set(value: int) -> set[int] | None:
    bits = {bit for bit in range(32) if value & (1 << bit)}
    return None if bits == {31} else bits


def _set_to_bits(bits: set[int] | None) -> int:
    raw = sum(1 << bit for bit in ({31} if bits is None else bits))
    return raw - (1 << 32) if raw >= 1 << 31 else raw


def _default_tagged_struct(schema: Struct | None, name: str, item) -> bool:
    """A tagged struct field holding its default: Kafka's generated code
    does not write it (FieldSpec.generateNonDefaultValueCheck), nor does
    kcore; kafka-python writes any struct it is given, so it is given none
    and its decoder's None stands for the default."""
    field = next((f for f in schema.fields if f.name == name), None) if schema is not None else None
    return (field is not None and field.kind == "struct" and field.tagged_versions is not None
            and to_dict(field.default_value()) == to_dict(item))


def _to_kafka_python(data_class: type, value: dict, schema: Struct | None = None):
    fields = data_class._struct.fields
    kwargs = {}
    for name, item in value.items():
        if _default_tagged_struct(schema, name, item):
            continue
        name = _their_name(fields, name)
        field = fields[name]
        ours = next((f.struct for f in schema.fields if f.name == name), None) if schema is not None else None
        if item is not None and field.is_struct_array():
            item = [_to_kafka_python(field.data_class, element, ours) for element in item]
        elif item is not None and field.is_struct():
            item = _to_kafka_python(field.data_class, item, ours)
        elif field.type_str == "bitfield":
            item = _bits_to_set(item)
        kwargs[name] = item
    return data_class(**kwargs)


def _from_kafka_python(schema: Struct, version: int, fields: dict, value: dict) -> dict:
    result = {}
    for field in schema.fields:
        if not field.present(version):
            continue
        name = _their_name(fields, field.name)
        item = value[name]
        theirs = fields[name]
        if item is None and field.kind == "struct" and field.tagged(version):
            item = to_dict(field.default_value())
        if item is not None and field.struct is not None:
            sub_fields = theirs.data_class._struct.fields
            if field.kind == "array":
                item = [_from_kafka_python(field.struct, version, sub_fields, element) for element in item]
            else:
                item = _from_kafka_python(field.struct, version, sub_fields, item)
        elif theirs.type_str == "bitfield":
            item = _set_to_bits(item)
        if item is None and field.kind == "struct" and field.tagged(version):
            item = to_dict(field.default_value())  # kafka-python: an absent tagged struct is None
        result[field.name] = item
    return result


# ZooKeeper-era inter-broker APIs, gone from Kafka 4 and so from kafka-python: checked
# against Kafka 3.9's specs kept in tests/unit/specs (test_protocol_schemas) and golden
# bytes (test_protocol_inter_broker) instead.
NOT_IN_KAFKA_PYTHON = {path.stem for path in LOCAL_SPECS.glob("*.json")}
JSON_CASES = [case for case in CASES if case[1].name not in NOT_IN_KAFKA_PYTHON]


def test_kafka_python_has_a_json_class_for_every_served_message_it_can_know():
    missing = {schema.name for _id, schema, _version in CASES} - set(JSON_CLASSES)
    assert missing == NOT_IN_KAFKA_PYTHON


@pytest.mark.parametrize("case", JSON_CASES, ids=[case[0] for case in JSON_CASES])
def test_kcore_and_kafka_python_json_classes_agree_byte_for_byte(case):
    _id, schema, version = case
    cls = JSON_CLASSES[schema.name]

    drawn = values(schema, version)
    if schema.name == "ApiVersionsResponse":
        # kafka-python reads any ApiVersions body carrying an error as v0 (the
        # KIP-511 error format, checked in test_protocol_frames): draw no errors.
        drawn = drawn.map(lambda value: {**value, "error_code": 0})

    @CROSS_CHECK
    @given(drawn)
    def check(value):
        ours = encode_struct(schema, version, value)
        theirs = bytes(_to_kafka_python(cls[version], value, schema).encode(header=False))
        assert ours == theirs
        decoded_by_them = _from_kafka_python(schema, version, cls._struct.fields,
                                             cls.decode(ours, version=version).to_dict(json=False))
        expected = in_version(schema, version, normalize(schema, version, value))
        assert decoded_by_them == expected
        assert to_dict(decode_struct(schema, version, theirs)) == normalize(schema, version, value)

    check()


def _kind(schema: Struct) -> str:
    return "Response" if schema.name.endswith("Response") else "Request"


# The old CreatePartitions request nests count and assignments in a
# new_partitions struct: same bytes, another shape; the JSON check covers it.
OLD_SHAPE_DIFFERS = {"CreatePartitionsRequest"}
# kafka.protocol.old's DescribeAcls v2 reuses the v1 schema although its
# docstring says "Enable flexible version": Kafka's spec makes v2 flexible
# (compact strings, tagged fields), so the bytes differ by design. The JSON
# classes check covers v2.
OLD_NOT_FLEXIBLE = {("DescribeAclsRequest", 2), ("DescribeAclsResponse", 2)}
OLD_CASES = [case for case in CASES
             if (case[1].api_key, _kind(case[1]), case[2]) in OLD_CLASSES
             and case[1].name not in OLD_SHAPE_DIFFERS
             and (case[1].name, case[2]) not in OLD_NOT_FLEXIBLE]


def _as_tuple(schema: Struct, version: int, value: dict, old_schema) -> tuple:
    """Positional form used by kafka.protocol.old: untagged fields in order.

    The old structs write an array of one-field structs as an array of that
    field (Metadata v0 topics are strings): unwrapped to match.
    """
    items = []
    fields = [f for f in schema.fields if f.present(version) and not f.tagged(version)]
    for field, old_type in zip(fields, old_schema.fields):
        item = value[field.name]
        if item is not None and field.struct is not None:
            inner = old_type.array_of if field.kind == "array" else old_type
            if isinstance(inner, OldSchema):
                def convert(element, inner=inner, struct=field.struct):
                    return _as_tuple(struct, version, element, inner)
            else:
                (only,) = [f.name for f in field.struct.fields if f.present(version)]
                def convert(element, only=only):
                    return element[only]
            item = [convert(element) for element in item] if field.kind == "array" else convert(item)
        elif old_type is OldBitField:
            item = _bits_to_set(item)
        items.append(item)
    if old_schema.names[len(items):] == ("tags",):
        items.append({})
    return tuple(items)


def _plain(value):
    """Nested tuples without the tagged-field dicts (the old decoders drop them)."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item) for item in value if not isinstance(item, dict))
    return value


@pytest.mark.parametrize("case", OLD_CASES, ids=[case[0] for case in OLD_CASES])
def test_kcore_and_kafka_python_old_structs_agree_byte_for_byte(case):
    _id, schema, version = case
    old = OLD_CLASSES[(schema.api_key, _kind(schema), version)]

    # The old structs predate tagged fields: those stay at their defaults.
    tagged = {field.name: field.default_value() for field in schema.fields if field.tagged(version)}

    @CROSS_CHECK
    @given(values(schema, version).map(lambda value: {**value, **tagged}))
    def check(value):
        normalized = normalize(schema, version, value)
        ours = encode_struct(schema, version, value)
        positional = _as_tuple(schema, version, normalized, old.SCHEMA)
        theirs = old.SCHEMA.encode(list(positional))
        assert ours == theirs
        assert _plain(old.SCHEMA.decode(io.BytesIO(ours))) == _plain(positional)

    check()

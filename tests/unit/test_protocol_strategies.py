"""Hypothesis strategies for any message schema at any version, and their checks.

``values(schema, version)`` draws a plain dict holding every field of that
version with a valid value; ``normalize`` gives the dict a decoder is
expected to return (defaults filled in, records as bytes). Other protocol
test modules import these (``from tests.unit.test_protocol_strategies import ...``).
"""
from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kcore.protocol import REQUESTS, RESPONSES, SUPPORTED_VERSIONS, decode_struct, encode_struct, to_dict
from kcore.protocol.schema import Field, Struct

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
}
_SCALARS = {
    **_INTS,
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=24),
    "records": st.binary(max_size=48),
    "uuid": st.uuids(),
}


def all_message_versions() -> list[tuple[str, object, int]]:
    """(id, schema, version) for every request and response at every supported version."""
    cases = []
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        for schema in (REQUESTS[key], RESPONSES[key]):
            cases += [(f"{schema.name}-v{version}", schema, version) for version in range(low, high + 1)]
    return cases


def field_values(field: Field, version: int, depth: int = 0) -> st.SearchStrategy:
    if field.kind == "array":
        element = field.type[2:]
        items = values(field.struct, version, depth + 1) if field.struct else _SCALARS[element]
        strategy = st.lists(items, max_size=3 if depth < 2 else 1)
    elif field.kind == "struct":
        strategy = values(field.struct, version, depth + 1)
    else:
        strategy = _SCALARS[field.type]
    if field.nullable(version):
        strategy = st.none() | strategy
    if field.tagged(version):
        strategy = st.just(field.default_value()) | strategy
    return strategy


def values(schema: Struct, version: int, depth: int = 0) -> st.SearchStrategy:
    """Dicts with a valid value for every field of ``schema`` present at ``version``."""
    present = {field.name: field_values(field, version, depth)
               for field in schema.fields if field.present(version)}
    return st.fixed_dictionaries(present)


def normalize(schema: Struct, version: int, value: dict) -> dict:
    """What decoding the encoding of ``value`` must give, as plain data."""
    result = {}
    for field in schema.fields:
        if not field.present(version):
            result[field.name] = field.default_value()
            continue
        item = value.get(field.name, field.default_value())
        if item is not None and field.struct is not None:
            if field.kind == "array":
                item = [normalize(field.struct, version, element) for element in item]
            else:
                item = normalize(field.struct, version, item)
        result[field.name] = to_dict(item)
    return result


def in_version(schema: Struct, version: int, value: dict) -> dict:
    """``value`` restricted to the fields present at ``version`` (recursively)."""
    result = {}
    for field in schema.fields:
        if not field.present(version):
            continue
        item = value[field.name]
        if item is not None and field.struct is not None:
            if field.kind == "array":
                item = [in_version(field.struct, version, element) for element in item]
            else:
                item = in_version(field.struct, version, item)
        result[field.name] = item
    return result


@given(st.data())
def test_drawn_values_encode_and_decode_for_any_message_version(data):
    _name, schema, version = data.draw(st.sampled_from(all_message_versions()))
    value = data.draw(values(schema, version))
    decoded = decode_struct(schema, version, encode_struct(schema, version, value))
    assert to_dict(decoded) == normalize(schema, version, value)


def test_normalize_fills_absent_fields_with_schema_defaults():
    fetch_response = RESPONSES[1]
    partition = normalize(fetch_response, 4, {"responses": [{"topic": "t", "partitions": [{}]}]})
    got = partition["responses"][0]["partitions"][0]
    assert {name: got[name] for name in ("last_stable_offset", "log_start_offset",
                                         "preferred_read_replica", "aborted_transactions")} == {
        "last_stable_offset": -1, "log_start_offset": -1, "preferred_read_replica": -1,
        "aborted_transactions": [],
    }
    assert Field("id", "uuid", "0+").default_value() == uuid.UUID(int=0)

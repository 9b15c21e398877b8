"""Hypothesis strategies for every request and response schema and version."""
from __future__ import annotations

from hypothesis import strategies as st

from kcore.protocol import REQUESTS, RESPONSES, SUPPORTED_VERSIONS, to_dict
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
    if field.tagged(version):  # the default, which is not sent (a struct's: as a dict)
        strategy = st.just(to_dict(field.default_value())) | strategy
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
            result[field.name] = to_dict(field.default_value())  # a struct's default is a data object
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

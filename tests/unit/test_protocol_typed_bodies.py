"""The TypedDicts that type the Produce, Fetch and Metadata responses as
their handlers build them (kcore/protocol/messages/) hold exactly the
fields of every version of their struct, with the field's Python type: mypy
then refuses a misspelt key in those handlers, and a schema change that
the TypedDicts miss fails here."""
from __future__ import annotations

import uuid
from typing import Any, get_type_hints, is_typeddict

import pytest

from kcore.protocol.messages import fetch, metadata, produce
from kcore.protocol.schema import Field, Struct

SCALARS: dict[str, Any] = {
    "int8": int, "int16": int, "int32": int, "int64": int, "uint16": int, "uint32": int,
    "bool": bool, "float64": float, "string": str, "bytes": bytes, "uuid": uuid.UUID, "records": Any,
}
MODULES = [produce, fetch, metadata]


def structs(schema: Struct) -> list[Struct]:
    found = [schema]
    for sub in schema.substructs():
        found += structs(sub)
    return found


def typed_dict(module, struct: Struct) -> type:
    typed = getattr(module, f"{struct.name}Dict")
    assert is_typeddict(typed) and typed.__total__ is False, typed
    return typed


def expected_type(module, field: Field) -> Any:
    if field.kind == "array":
        element = field.type[2:]
        python = list[typed_dict(module, field.nested) if field.struct else SCALARS[element]]
    elif field.kind == "struct":
        python = typed_dict(module, field.nested)
    else:
        python = SCALARS[field.type]
    if field.nullable_versions is not None and python is not Any:
        python = python | None
    return python


CASES = [(module, struct) for module in MODULES for struct in structs(module.RESPONSE)]


@pytest.mark.parametrize("module, struct", CASES, ids=[struct.name for _, struct in CASES])
def test_each_typed_dict_holds_the_fields_of_every_version_with_their_types(module, struct):
    hints = get_type_hints(typed_dict(module, struct))
    assert list(hints) == [field.name for field in struct.fields]
    for field in struct.fields:
        assert hints[field.name] == expected_type(module, field), field.name

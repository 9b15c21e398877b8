"""Avro schemas, parsed and checked by the Apache Avro library (``avro``).

The canonical text is the schema as Avro writes it back: compact JSON,
every named type defined once and then referred to by its full name,
primitive types written as their bare names (``{"type": "string"}`` is
``"string"``). Types that come from references are referred to, not
inlined, as Confluent keeps them.

Compatibility is Avro's own reader/writer resolution
(``avro.compatibility``, the port of Java's ``SchemaCompatibility`` that
Confluent's ``AvroSchema.isBackwardCompatible`` calls): the new schema as
reader must read what the previous one wrote. Its findings are reported
as Confluent words them: the error type, the location and the names.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from kcore.schema_registry import errors
from kcore.schema_registry.schema_types import AVRO, ParsedSchema, ResolvedReference


class AvroSchema(ParsedSchema):
    schema_type = AVRO

    def __init__(self, schema: avro.schema.Schema, canonical: str):
        self.schema = schema
        self.canonical = canonical

    def normalized(self) -> str:
        return self.canonical

    def record_name(self) -> str | None:
        return self.schema.fullname if isinstance(self.schema, avro.schema.NamedSchema) else None

    def backward_errors(self, previous: ParsedSchema) -> list[str]:
        if not isinstance(previous, AvroSchema):
            return [f"Incompatible because of different schema type: {previous.schema_type} and AVRO"]
        result = ReaderWriterCompatibilityChecker().get_compatibility(self.schema, previous.schema)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        found = []
        locations = sorted(result.locations) or ["/"]
        for incompatibility in result.incompatibilities:
            kind = incompatibility.name.upper()
            names = ", ".join(_flatten(result.messages))
            found.append(f"{{errorType:'{kind}', description:'{_description(kind, names)}', "
                         f"additionalInfo:'{names}'}} at {', '.join(locations)}")
        return found


def _flatten(messages: Any) -> list[str]:
    """Avro's messages are names, or sets of names (missing enum symbols)."""
    if isinstance(messages, set | frozenset | list | tuple):
        return sorted({name for item in messages for name in _flatten(item)})
    return [str(messages)]


def _description(kind: str, names: str) -> str:
    return {
        "READER_FIELD_MISSING_DEFAULT_VALUE":
            f"The field '{names}' in the new schema has no default value and is missing in the old schema",
        "MISSING_ENUM_SYMBOLS": f"The new schema is missing enum symbols '{names}' at the old schema",
        "MISSING_UNION_BRANCH": f"The new schema is missing a type inside a union field: {names}",
        "TYPE_MISMATCH": f"The type (path '{names}') in the new schema does not match the type in the "
                         f"old schema",
        "NAME_MISMATCH": f"The type name in the new schema does not match the old one: {names}",
        "FIXED_SIZE_MISMATCH": f"The size of FIXED type field in the new schema does not match the old "
                               f"one: {names}",
    }.get(kind, names)


def parse(text: str, references: Sequence[ResolvedReference] = ()) -> AvroSchema:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise errors.invalid_schema(f"not JSON: {exc}") from None
    names = avro.schema.Names(validate_names=True)
    known = avro.schema.Names(validate_names=True)
    try:
        for reference in references:
            if reference.schema_type != AVRO:
                raise errors.invalid_schema(f"the reference {reference.name!r} is not an Avro schema")
            referenced = avro.schema.make_avsc_object(json.loads(reference.text), names)
            referenced.to_json(known)  # their named types are referred to by name below
        schema = avro.schema.make_avsc_object(document, names)
    except (avro.errors.AvroException, ValueError, TypeError, AttributeError, KeyError) as exc:
        raise errors.invalid_schema(str(exc) or type(exc).__name__) from None
    canonical = json.dumps(_plain(schema.to_json(known)), separators=(",", ":"), ensure_ascii=False)
    return AvroSchema(schema, canonical)


# Avro Java's Schema.toString order, which Confluent's registry serves.
_SCHEMA_ORDER = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size")
_FIELD_ORDER = ("name", "type", "doc", "default", "order", "aliases")


def _plain(value: Any, field: bool = False) -> Any:
    """Avro's to_json as plain JSON (it may hand back tuples and its own
    mappings), attributes in Avro Java's order."""
    if isinstance(value, dict):
        order = _FIELD_ORDER if field else _SCHEMA_ORDER
        keys = sorted(value, key=lambda key: order.index(key) if key in order else len(order))
        return {str(key): _plain(value[key], field=key == "fields") if key == "fields"
                else _plain(value[key]) for key in keys}
    if isinstance(value, list | tuple):
        return [_plain(item, field) for item in value]
    return value

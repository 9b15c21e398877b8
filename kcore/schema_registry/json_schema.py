"""JSON Schemas, checked by the ``jsonschema`` library (the draft its
``$schema`` names; draft-07, Confluent's default, without one).

A schema is valid when it is a JSON object or boolean that the draft's
meta-schema accepts and every ``$ref`` in it resolves: to a place in the
document itself, or to a reference of the registration (Confluent's
references: the ``name`` is the URL the ``$ref`` uses), through the
``referencing`` registry the library resolves with.

The canonical text is compact JSON in the author's key order (as
Confluent's Jackson writes it back); ``normalize=true`` sorts the keys too.
Compatibility is json_diff.py.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import jsonschema
import referencing.exceptions
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from kcore.schema_registry import errors, json_diff
from kcore.schema_registry.schema_types import JSON, ParsedSchema, ResolvedReference

# Where the document itself sits in the resolver: a base for its local refs.
ROOT_URI = "urn:kcore:schema"


class JsonSchema(ParsedSchema):
    schema_type = JSON

    def __init__(self, document: Any, registry: Registry, canonical: str):
        self.document = document
        self.registry = registry
        self.canonical = canonical

    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    def record_name(self) -> str | None:
        title = self.document.get("title") if isinstance(self.document, dict) else None
        return title if isinstance(title, str) else None

    def backward_errors(self, previous: ParsedSchema) -> list[str]:
        if not isinstance(previous, JsonSchema):
            return [f"Incompatible because of different schema type: {previous.schema_type} and JSON"]
        return [f"{{errorType:\"{kind}\", description:\"{description}\"}}"
                for kind, description in json_diff.incompatible_changes(
                    previous.document, previous.resolver(), self.document, self.resolver())]

    def resolver(self) -> json_diff.Resolver:
        return self.registry.resolver(base_uri=ROOT_URI)


def parse(text: str, references: Sequence[ResolvedReference] = ()) -> JsonSchema:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise errors.invalid_schema(f"not JSON: {exc}") from None
    if not isinstance(document, dict | bool):
        raise errors.invalid_schema("a JSON Schema is an object or a boolean")
    registry: Registry = Registry()
    for reference in references:
        if reference.schema_type != JSON:
            raise errors.invalid_schema(f"the reference {reference.name!r} is not a JSON Schema")
        try:
            contents = json.loads(reference.text)
        except ValueError as exc:
            raise errors.invalid_schema(f"the reference {reference.name!r} is not JSON: {exc}") from None
        registry = registry.with_resource(reference.name, _resource(contents))
    registry = registry.with_resource(ROOT_URI, _resource(document))
    validator = validator_for(document, default=jsonschema.Draft7Validator)
    try:
        validator.check_schema(document)
    except jsonschema.SchemaError as exc:
        raise errors.invalid_schema(f"{exc.message} at {'/'.join(map(str, exc.absolute_path)) or '#'}") from None
    resolver = registry.resolver(base_uri=ROOT_URI)
    for ref in _refs(document):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable as exc:
            raise errors.invalid_schema(f"$ref {ref!r} does not resolve: {exc}") from None
    canonical = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return JsonSchema(document, registry, canonical)


def _resource(contents: Any) -> Resource:
    """A resource of the draft its ``$schema`` names, draft-07 without one."""
    return Resource.from_contents(contents, default_specification=DRAFT7)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for key, value in node.items():
            if key not in ("const", "enum", "default", "examples"):
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)

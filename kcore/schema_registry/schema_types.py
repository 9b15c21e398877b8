"""What every schema type gives the registry: a parsed schema with its
canonical text, the names the subject name strategies read, and the
compatibility check against an earlier version.

``parse(schema_type, text, references)`` dispatches to the type's module
(avro_schema.py, json_schema.py, protobuf_schema.py). ``references`` are
the schemas the text refers to, already resolved by the registry to
(reference name, text) pairs, dependencies before their dependants, as
Confluent resolves a schema's references recursively by subject and
version.

The canonical text is what the registry stores, serves and compares: the
same schema written twice with other whitespace (or, for Protobuf, as a
.proto file or as a base64 FileDescriptorProto) has one canonical text,
so it registers once and gets one id.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from kcore.schema_registry import errors

AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
SCHEMA_TYPES = (JSON, PROTOBUF, AVRO)  # Confluent's GET /schemas/types order


@dataclass(frozen=True)
class ResolvedReference:
    """A referenced schema: its reference ``name`` and its text and type."""

    name: str
    schema_type: str
    text: str


class ParsedSchema(ABC):
    """A valid schema of one type. Immutable once parsed."""

    schema_type: str
    canonical: str

    @abstractmethod
    def normalized(self) -> str:
        """The text under ``normalize=true``: the canonical text with the
        choices that do not change meaning (key order, say) fixed too."""

    @abstractmethod
    def record_name(self) -> str | None:
        """The fully qualified name RecordNameStrategy uses: the Avro named
        type, the first Protobuf message, the JSON Schema's title."""

    @abstractmethod
    def backward_errors(self, previous: ParsedSchema) -> list[str]:
        """Why data written with ``previous`` cannot be read with this
        schema (Confluent's BACKWARD, one direction); empty when it can."""

    def render(self, fmt: str | None) -> str:
        """The text served for ``?format=``; the canonical text unless the
        type knows the format."""
        return self.canonical


def parse(schema_type: str, text: str, references: Sequence[ResolvedReference] = ()) -> ParsedSchema:
    """The parsed schema; RegistryError 42201 when it is not a valid schema
    of ``schema_type``, 42201 naming the type when the type is unknown."""
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("the schema is empty")
    if schema_type == AVRO:
        from kcore.schema_registry import avro_schema
        return avro_schema.parse(text, references)
    if schema_type == JSON:
        from kcore.schema_registry import json_schema
        return json_schema.parse(text, references)
    if schema_type == PROTOBUF:
        from kcore.schema_registry import protobuf_schema
        return protobuf_schema.parse(text, references)
    raise errors.RegistryError(errors.INVALID_SCHEMA, f"Invalid schema type {schema_type!r}: one of "
                                                      f"{', '.join(SCHEMA_TYPES)}")

"""Protobuf schemas, built and checked by the protobuf library's
descriptor pool.

A schema arrives as .proto text or, as confluent-kafka's serializers send
it, as a base64 ``FileDescriptorProto``. Either way it becomes a
descriptor (protobuf_descriptor.py for text) that is added to a fresh
pool after its references (each under its reference name, the import
path) and the well-known types of ``google/protobuf/`` (which the
serializers do not register, ``skip.known.types``). The pool resolves
every type name and refuses what protoc would; the resolved descriptor is
printed back as the canonical text (protobuf_printer.py), so the same
schema registers once whichever form it came in.

``?format=serialized`` answers with the base64 ``FileDescriptorProto``,
which confluent-kafka's deserializers ask for. Compatibility is
protobuf_diff.py.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

from google.protobuf import (
    any_pb2,
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    source_context_pb2,
    struct_pb2,
    timestamp_pb2,
    type_pb2,
    wrappers_pb2,
)
from google.protobuf.message import DecodeError

from kcore.schema_registry import errors, protobuf_diff
from kcore.schema_registry.protobuf_descriptor import ProtoSyntaxError, file_descriptor
from kcore.schema_registry.protobuf_printer import print_file
from kcore.schema_registry.schema_types import PROTOBUF, ParsedSchema, ResolvedReference

# The file name a schema gets in the pool when its text names none.
DEFAULT_NAME = "default.proto"
# descriptor.proto first: the others' options refer to it.
WELL_KNOWN = {module.DESCRIPTOR.name: module.DESCRIPTOR.serialized_pb for module in (
    descriptor_pb2, any_pb2, source_context_pb2, type_pb2, api_pb2, duration_pb2, empty_pb2,
    field_mask_pb2, struct_pb2, timestamp_pb2, wrappers_pb2)}


class ProtobufSchema(ParsedSchema):
    schema_type = PROTOBUF

    def __init__(self, proto: descriptor_pb2.FileDescriptorProto, dependencies: dict[str, bytes]):
        self.proto = proto
        self.dependencies = dependencies  # import path -> serialized FileDescriptorProto
        self.canonical = print_file(proto)

    def normalized(self) -> str:
        return self.canonical

    def record_name(self) -> str | None:
        if not self.proto.message_type:
            return None
        name = self.proto.message_type[0].name
        return f"{self.proto.package}.{name}" if self.proto.package else name

    def backward_errors(self, previous: ParsedSchema) -> list[str]:
        if not isinstance(previous, ProtobufSchema):
            return [f"Incompatible because of different schema type: {previous.schema_type} and PROTOBUF"]
        return [f"{{errorType:\"{kind}\", description:\"{description}\"}}"
                for kind, description in protobuf_diff.incompatible_changes(
                    previous.proto, previous.dependencies, self.proto, self.dependencies)]

    def render(self, fmt: str | None) -> str:
        if fmt == "serialized":
            return base64.standard_b64encode(self.proto.SerializeToString()).decode("ascii")
        return self.canonical


def parse(text: str, references: Sequence[ResolvedReference] = ()) -> ProtobufSchema:
    pool = descriptor_pool.DescriptorPool()
    dependencies: dict[str, bytes] = {}
    for reference in references:
        if reference.schema_type != PROTOBUF:
            raise errors.invalid_schema(f"the reference {reference.name!r} is not a Protobuf schema")
        proto = _descriptor(reference.text, reference.name)
        proto.name = reference.name
        dependencies[reference.name] = proto.SerializeToString()
    proto = _descriptor(text, DEFAULT_NAME)
    wanted = set(proto.dependency)
    for reference_proto in list(dependencies.values()):
        wanted.update(descriptor_pb2.FileDescriptorProto.FromString(reference_proto).dependency)
    try:
        for name, serialized in WELL_KNOWN.items():
            if name in wanted or name == descriptor_pb2.DESCRIPTOR.name:
                pool.AddSerializedFile(serialized)
        for serialized in dependencies.values():
            pool.AddSerializedFile(serialized)
        pool.Add(proto)
        resolved = descriptor_pb2.FileDescriptorProto()
        pool.FindFileByName(proto.name).CopyToProto(resolved)
        resolved.name = DEFAULT_NAME  # the name a client gave its file is not part of the schema
    except (TypeError, KeyError, ValueError) as exc:
        raise errors.invalid_schema(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    for name in WELL_KNOWN:
        if name in wanted:
            dependencies.setdefault(name, WELL_KNOWN[name])
    return ProtobufSchema(resolved, dependencies)


def _descriptor(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """The text as a FileDescriptorProto: a base64 one as it is (named
    ``name`` if it has no name), .proto text through the parser."""
    stripped = text.strip()
    if stripped and not any(char in stripped for char in " \n;{"):
        try:
            proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
        except (binascii.Error, DecodeError, ValueError):
            pass
        else:
            if not proto.name:
                proto.name = name
            return proto
    try:
        return file_descriptor(text, name)
    except ProtoSyntaxError as exc:
        raise errors.invalid_schema(str(exc)) from None

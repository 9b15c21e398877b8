"""A resolved ``FileDescriptorProto`` written back as .proto text: the
canonical text of a Protobuf schema.

The descriptor pool has resolved every type name, so types are written
fully qualified with a leading dot (``.shop.v1.Order.Item``), which any
.proto parser reads back to the same type wherever it appears. Elements
keep the author's order; map fields are written as ``map<K, V>`` and
their entry messages left out; proto3 ``optional`` is written back and
its synthetic oneof left out; a real oneof is written where its first
field is.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import Message

from kcore.schema_registry.protobuf_descriptor import SCALAR_TYPES

F = descriptor_pb2.FieldDescriptorProto
_SCALAR_NAMES = {number: name for name, number in SCALAR_TYPES.items()}
_LABELS = {F.LABEL_OPTIONAL: "optional", F.LABEL_REQUIRED: "required", F.LABEL_REPEATED: "repeated"}
INDENT = "  "


def print_file(proto: descriptor_pb2.FileDescriptorProto) -> str:
    proto3 = proto.syntax == "proto3"
    lines = [f'syntax = "{proto.syntax or "proto2"}";']
    if proto.package:
        lines.append(f"package {proto.package};")
    for index, dependency in enumerate(proto.dependency):
        modifier = "public " if index in proto.public_dependency else \
            "weak " if index in proto.weak_dependency else ""
        lines.append(f'import {modifier}"{dependency}";')
    lines.extend(f"option {option};" for option in _options(proto.options))
    for message in proto.message_type:
        lines.extend(_message(message, proto3, ""))
    for enum in proto.enum_type:
        lines.extend(_enum(enum, ""))
    lines.extend(_extensions(proto.extension, proto3, ""))
    for service in proto.service:
        lines.extend(_service(service))
    return "\n".join(lines) + "\n"


def _message(message: descriptor_pb2.DescriptorProto, proto3: bool, indent: str) -> Iterator[str]:
    inner = indent + INDENT
    yield f"{indent}message {message.name} {{"
    for option in _options(message.options):
        yield f"{inner}option {option};"
    entries = {nested.name: nested for nested in message.nested_type if nested.options.map_entry}
    real_oneofs = {field.oneof_index for field in message.field
                   if field.HasField("oneof_index") and not field.proto3_optional}
    written: set[int] = set()
    for field in message.field:
        if field.HasField("oneof_index") and field.oneof_index in real_oneofs:
            if field.oneof_index in written:
                continue
            written.add(field.oneof_index)
            oneof = message.oneof_decl[field.oneof_index]
            yield f"{inner}oneof {oneof.name} {{"
            for option in _options(oneof.options):
                yield f"{inner}{INDENT}option {option};"
            for member in message.field:
                if member.HasField("oneof_index") and member.oneof_index == field.oneof_index:
                    yield f"{inner}{INDENT}{_field(member, proto3, entries, in_oneof=True)}"
            yield f"{inner}}}"
        else:
            yield f"{inner}{_field(field, proto3, entries)}"
    for reserved in message.reserved_range:
        yield f"{inner}reserved {_range(reserved.start, reserved.end - 1)};"
    if message.reserved_name:
        yield f"{inner}reserved {', '.join(_quote(name) for name in message.reserved_name)};"
    for extension_range in message.extension_range:
        yield f"{inner}extensions {_range(extension_range.start, extension_range.end - 1)};"
    for nested in message.nested_type:
        if nested.name not in entries:
            yield from _message(nested, proto3, inner)
    for enum in message.enum_type:
        yield from _enum(enum, inner)
    yield from _extensions(message.extension, proto3, inner)
    yield f"{indent}}}"


def _field(field: descriptor_pb2.FieldDescriptorProto, proto3: bool,
           entries: dict[str, descriptor_pb2.DescriptorProto], in_oneof: bool = False) -> str:
    entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.label == F.LABEL_REPEATED else None
    if entry is not None:
        key, value = entry.field[0], entry.field[1]
        declaration = f"map<{_type(key)}, {_type(value)}> {field.name} = {field.number}"
    else:
        if in_oneof:
            label = ""
        elif proto3:
            label = "repeated " if field.label == F.LABEL_REPEATED else \
                "optional " if field.proto3_optional else ""
        else:
            label = _LABELS[field.label] + " "
        declaration = f"{label}{_type(field)} {field.name} = {field.number}"
    options = []
    if field.HasField("default_value"):
        options.append(f"default = {_default(field)}")
    if field.HasField("json_name"):
        options.append(f"json_name = {_quote(field.json_name)}")
    options.extend(_options(field.options))
    return f"{declaration}{' [' + ', '.join(options) + ']' if options else ''};"


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    return field.type_name if field.type_name else _SCALAR_NAMES[field.type]


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type in (F.TYPE_STRING, F.TYPE_BYTES):
        return _quote(field.default_value)
    return field.default_value


def _enum(enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> Iterator[str]:
    inner = indent + INDENT
    yield f"{indent}enum {enum.name} {{"
    for option in _options(enum.options):
        yield f"{inner}option {option};"
    for value in enum.value:
        options = list(_options(value.options))
        yield f"{inner}{value.name} = {value.number}{' [' + ', '.join(options) + ']' if options else ''};"
    for reserved in enum.reserved_range:
        yield f"{inner}reserved {_range(reserved.start, reserved.end)};"
    if enum.reserved_name:
        yield f"{inner}reserved {', '.join(_quote(name) for name in enum.reserved_name)};"
    yield f"{indent}}}"


def _extensions(extensions: Any, proto3: bool, indent: str) -> Iterator[str]:
    by_extendee: dict[str, list] = {}
    for extension in extensions:
        by_extendee.setdefault(extension.extendee, []).append(extension)
    for extendee, fields in by_extendee.items():
        yield f"{indent}extend {extendee} {{"
        for field in fields:
            yield f"{indent}{INDENT}{_field(field, proto3, {})}"
        yield f"{indent}}}"


def _service(service: descriptor_pb2.ServiceDescriptorProto) -> Iterator[str]:
    yield f"service {service.name} {{"
    for option in _options(service.options):
        yield f"{INDENT}option {option};"
    for method in service.method:
        head = (f"{INDENT}rpc {method.name}({'stream ' if method.client_streaming else ''}{method.input_type}) "
                f"returns ({'stream ' if method.server_streaming else ''}{method.output_type})")
        options = list(_options(method.options))
        if options:
            yield head + " {"
            yield from (f"{INDENT * 2}option {option};" for option in options)
            yield f"{INDENT}}}"
        else:
            yield head + ";"
    yield "}"


def _range(start: int, end: int) -> str:
    return str(start) if start == end else f"{start} to {end}"


def _options(options: Message) -> Iterator[str]:
    for descriptor, value in options.ListFields():
        if descriptor.name in ("uninterpreted_option", "map_entry"):
            continue
        if descriptor.enum_type is not None:
            shown = descriptor.enum_type.values_by_number[value].name
        else:
            shown = _literal(value)
        yield f"{descriptor.name} = {shown}"
    for uninterpreted in getattr(options, "uninterpreted_option", ()):
        name = ".".join(f"({part.name_part})" if part.is_extension else part.name_part
                        for part in uninterpreted.name)
        yield f"{name} = {_uninterpreted_value(uninterpreted)}"


def _uninterpreted_value(option: Any) -> str:
    if option.HasField("identifier_value"):
        return option.identifier_value
    if option.HasField("positive_int_value"):
        return str(option.positive_int_value)
    if option.HasField("negative_int_value"):
        return str(option.negative_int_value)
    if option.HasField("double_value"):
        return repr(option.double_value)
    if option.HasField("aggregate_value"):
        return f"{{ {option.aggregate_value} }}"
    return _quote(option.string_value.decode("utf-8", "replace"))


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    return str(value)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

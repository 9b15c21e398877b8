"""A .proto file's text as a ``FileDescriptorProto``, the form the
protobuf library builds descriptors from.

``proto-schema-parser`` reads the text into its syntax tree (proto2 and
proto3); this module turns the tree into the descriptor message as protoc
would, leaving the names of message and enum types as written: the
library's descriptor pool resolves them in scope when the file is added
(protobuf_schema.py), and reports a name it cannot resolve. Map fields
become their ``XxxEntry`` messages, proto3 ``optional`` fields their
synthetic oneofs, options of descriptor.proto are set by name and custom
ones (``(name).field``) kept as uninterpreted options. Groups and
editions are refused.
"""
from __future__ import annotations

import math
from typing import Any

from antlr4.error.ErrorListener import ErrorListener
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message
from proto_schema_parser import ast
from proto_schema_parser.parser import Parser

F = descriptor_pb2.FieldDescriptorProto
SCALAR_TYPES = {
    "double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
    "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
    "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
    "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64,
}
LABELS = {ast.FieldCardinality.OPTIONAL: F.LABEL_OPTIONAL, ast.FieldCardinality.REQUIRED: F.LABEL_REQUIRED,
          ast.FieldCardinality.REPEATED: F.LABEL_REPEATED}
# Field numbers stop at 2^29 - 1; "max" in a reserved or extensions range.
MAX_FIELD_NUMBER = 536_870_911
MAX_ENUM_NUMBER = 2_147_483_647


class ProtoSyntaxError(ValueError):
    """The text is not a .proto file kcore reads."""


class _Raise(ErrorListener):
    def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802, N803
        raise ProtoSyntaxError(f"line {line}:{column} {msg}")


def _quiet(recognizer: Any) -> None:
    recognizer.removeErrorListeners()
    recognizer.addErrorListener(_Raise())


def file_descriptor(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """ProtoSyntaxError when the text does not parse or uses what kcore refuses."""
    tree = Parser(setup_lexer=_quiet, setup_parser=_quiet).parse(text)
    if tree.edition is not None:
        raise ProtoSyntaxError("editions are not supported: use syntax = \"proto2\" or \"proto3\"")
    proto = descriptor_pb2.FileDescriptorProto(name=name)
    proto3 = tree.syntax == "proto3"
    if tree.syntax not in (None, "proto2", "proto3"):
        raise ProtoSyntaxError(f"unknown syntax {tree.syntax!r}")
    if proto3:
        proto.syntax = "proto3"
    for element in tree.file_elements:
        if isinstance(element, ast.Package):
            proto.package = element.name
        elif isinstance(element, ast.Import):
            if element.public:
                proto.public_dependency.append(len(proto.dependency))
            if element.weak:
                proto.weak_dependency.append(len(proto.dependency))
            proto.dependency.append(element.name)
        elif isinstance(element, ast.Option):
            _set_option(proto.options, element)
        elif isinstance(element, ast.Message):
            _message(proto.message_type.add(), element, proto3)
        elif isinstance(element, ast.Enum):
            _enum(proto.enum_type.add(), element)
        elif isinstance(element, ast.Service):
            _service(proto.service.add(), element)
        elif isinstance(element, ast.Extension):
            _extension(proto.extension, element, proto3)
    return proto


def _message(proto: descriptor_pb2.DescriptorProto, message: ast.Message, proto3: bool) -> None:
    proto.name = message.name
    synthetic: list[descriptor_pb2.FieldDescriptorProto] = []
    for element in message.elements:
        if isinstance(element, ast.Field):
            field = _field(proto.field.add(), element, proto3)
            if field.proto3_optional:
                synthetic.append(field)
        elif isinstance(element, ast.MapField):
            _map_field(proto, element)
        elif isinstance(element, ast.OneOf):
            index = len(proto.oneof_decl)
            oneof = proto.oneof_decl.add(name=element.name)
            for item in element.elements:
                if isinstance(item, ast.Field):
                    _field(proto.field.add(), item, proto3).oneof_index = index
                elif isinstance(item, ast.Option):
                    _set_option(oneof.options, item)
                elif isinstance(item, ast.Group):
                    raise ProtoSyntaxError("groups are not supported")
        elif isinstance(element, ast.Message):
            _message(proto.nested_type.add(), element, proto3)
        elif isinstance(element, ast.Enum):
            _enum(proto.enum_type.add(), element)
        elif isinstance(element, ast.Option):
            _set_option(proto.options, element)
        elif isinstance(element, ast.Reserved):
            for start, end in _ranges(element.ranges, MAX_FIELD_NUMBER):
                proto.reserved_range.add(start=start, end=end + 1)
            proto.reserved_name.extend(element.names)
        elif isinstance(element, ast.ExtensionRange):
            for start, end in _ranges(element.ranges, MAX_FIELD_NUMBER):
                proto.extension_range.add(start=start, end=end + 1)
        elif isinstance(element, ast.Extension):
            _extension(proto.extension, element, proto3)
        elif isinstance(element, ast.Group):
            raise ProtoSyntaxError("groups are not supported")
    for field in synthetic:  # protoc puts the synthetic oneofs after the real ones
        field.oneof_index = len(proto.oneof_decl)
        proto.oneof_decl.add(name=f"_{field.name}")


def _field(proto: descriptor_pb2.FieldDescriptorProto, field: ast.Field,
           proto3: bool) -> descriptor_pb2.FieldDescriptorProto:
    proto.name = field.name
    proto.number = field.number
    proto.label = LABELS.get(field.cardinality, F.LABEL_OPTIONAL) if field.cardinality else F.LABEL_OPTIONAL
    if proto3 and field.cardinality is ast.FieldCardinality.OPTIONAL:
        proto.proto3_optional = True
    if field.type in SCALAR_TYPES:
        proto.type = SCALAR_TYPES[field.type]
    else:
        proto.type_name = field.type  # resolved by the descriptor pool
    for option in field.options:
        if option.name == "default":
            proto.default_value = _default_text(option.value)
        elif option.name == "json_name":
            proto.json_name = str(option.value)
        else:
            _set_option(proto.options, option)
    return proto


def _map_field(proto: descriptor_pb2.DescriptorProto, field: ast.MapField) -> None:
    entry_name = "".join(part[:1].upper() + part[1:] for part in field.name.split("_")) + "Entry"
    entry = proto.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    for name, number, type_name in (("key", 1, field.key_type), ("value", 2, field.value_type)):
        item = entry.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
        if type_name in SCALAR_TYPES:
            item.type = SCALAR_TYPES[type_name]
        else:
            item.type_name = type_name
    added = proto.field.add(name=field.name, number=field.number, label=F.LABEL_REPEATED,
                            type_name=entry_name)
    for option in field.options:
        _set_option(added.options, option)


def _enum(proto: descriptor_pb2.EnumDescriptorProto, enum: ast.Enum) -> None:
    proto.name = enum.name
    for element in enum.elements:
        if isinstance(element, ast.EnumValue):
            value = proto.value.add(name=element.name, number=element.number)
            for option in element.options:
                _set_option(value.options, option)
        elif isinstance(element, ast.Option):
            _set_option(proto.options, element)
        elif isinstance(element, ast.EnumReserved):
            for start, end in _ranges(element.ranges, MAX_ENUM_NUMBER):
                proto.reserved_range.add(start=start, end=end)  # enum ranges are inclusive
            proto.reserved_name.extend(element.names)


def _service(proto: descriptor_pb2.ServiceDescriptorProto, service: ast.Service) -> None:
    proto.name = service.name
    for element in service.elements:
        if isinstance(element, ast.Method):
            method = proto.method.add(name=element.name, input_type=element.input_type.type,
                                      output_type=element.output_type.type)
            if element.input_type.stream:
                method.client_streaming = True
            if element.output_type.stream:
                method.server_streaming = True
            for option in element.elements:
                if isinstance(option, ast.Option):
                    _set_option(method.options, option)
        elif isinstance(element, ast.Option):
            _set_option(proto.options, element)


def _extension(target: Any, extension: ast.Extension, proto3: bool) -> None:
    for element in extension.elements:
        if isinstance(element, ast.Field):
            _field(target.add(), element, proto3).extendee = extension.typeName
        elif isinstance(element, ast.Group):
            raise ProtoSyntaxError("groups are not supported")


def _ranges(ranges: list[str], maximum: int) -> list[tuple[int, int]]:
    """"5", "10 to 12", "20 to max" as inclusive (start, end)."""
    found = []
    for item in ranges:
        start, _, end = (part.strip() for part in str(item).partition(" to "))
        try:
            low = int(start, 0)
            high = maximum if end == "max" else int(end, 0) if end else low
        except ValueError:
            raise ProtoSyntaxError(f"bad range {item!r}") from None
        found.append((low, high))
    return found


def _default_text(value: Any) -> str:
    """A field default as FieldDescriptorProto.default_value spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ast.Identifier):
        return value.name
    if isinstance(value, float):
        return "inf" if value == math.inf else "-inf" if value == -math.inf else "nan" if value != value \
            else repr(value)
    return str(value)


def _set_option(options: Message, option: ast.Option) -> None:
    """A descriptor.proto option by its field name; a custom one (its name
    in parentheses) as an uninterpreted option, as protoc keeps it before
    the extension is known."""
    name, value = option.name, option.value
    field = options.DESCRIPTOR.fields_by_name.get(name)
    if field is not None and not isinstance(value, ast.MessageLiteral):
        try:
            if field.enum_type is not None:
                enum_name = value.name if isinstance(value, ast.Identifier) else str(value)
                setattr(options, name, field.enum_type.values_by_name[enum_name].number)
            else:
                setattr(options, name, value.name if isinstance(value, ast.Identifier) else value)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtoSyntaxError(f"bad value for option {name}: {exc}") from None
        return
    uninterpreted = options.uninterpreted_option.add()
    for part in _name_parts(name):
        uninterpreted.name.add(name_part=part.strip("()"), is_extension=part.startswith("("))
    if isinstance(value, ast.MessageLiteral):
        uninterpreted.aggregate_value = _aggregate(value)
    elif isinstance(value, bool) or isinstance(value, ast.Identifier):
        uninterpreted.identifier_value = ("true" if value else "false") if isinstance(value, bool) else value.name
    elif isinstance(value, int):
        if value >= 0:
            uninterpreted.positive_int_value = value
        else:
            uninterpreted.negative_int_value = value
    elif isinstance(value, float):
        uninterpreted.double_value = value
    else:
        uninterpreted.string_value = str(value).encode()


def _name_parts(name: str) -> list[str]:
    """``(foo.bar).baz`` -> ["(foo.bar)", "baz"]."""
    parts, current, depth = [], "", 0
    for char in name:
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += 1 if char == "(" else -1 if char == ")" else 0
        current += char
    parts.append(current)
    return [part for part in parts if part]


def _aggregate(literal: ast.MessageLiteral) -> str:
    items = []
    for element in literal.elements:
        if isinstance(element, ast.MessageLiteralField):
            value = element.value
            if isinstance(value, ast.MessageLiteral):
                items.append(f"{element.name} {{ {_aggregate(value)} }}")
            elif isinstance(value, str):
                items.append(f"{element.name}: {_quote(value)}")
            elif isinstance(value, bool):
                items.append(f"{element.name}: {'true' if value else 'false'}")
            elif isinstance(value, ast.Identifier):
                items.append(f"{element.name}: {value.name}")
            else:
                items.append(f"{element.name}: {value}")
    return " ".join(items)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

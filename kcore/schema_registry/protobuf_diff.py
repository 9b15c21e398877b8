"""Protobuf compatibility, by Confluent's rules (``protobuf/diff/``).

The previous schema and the new one are compared message by message (by
full name) and field by field (by number, the wire's identity), and each
difference is named as Confluent names it. The new schema is backward
compatible when every difference is in ``COMPATIBLE``: messages and enums
may be added, fields added, removed or renamed, enum constants changed,
oneofs added or removed; a message may not disappear, a field may not
change kind (scalar, message, map) or scalar group (varint numbers and
enums, zigzag numbers, fixed32, fixed64, float, double, string/bytes:
within a group the wire format is the same), nor become repeated or
single when it is a number, nor be required anew.

Both descriptors are resolved (every type name fully qualified), so a
field's message type is found by name in its own schema or in one of its
dependencies.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2

F = descriptor_pb2.FieldDescriptorProto
COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED",
    "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED",
    "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})
_SCALAR_KINDS = {
    F.TYPE_INT32: "GENERAL_NUMBER", F.TYPE_INT64: "GENERAL_NUMBER", F.TYPE_UINT32: "GENERAL_NUMBER",
    F.TYPE_UINT64: "GENERAL_NUMBER", F.TYPE_BOOL: "GENERAL_NUMBER", F.TYPE_ENUM: "GENERAL_NUMBER",
    F.TYPE_SINT32: "SIGNED_NUMBER", F.TYPE_SINT64: "SIGNED_NUMBER",
    F.TYPE_FIXED32: "FIXED32", F.TYPE_SFIXED32: "FIXED32", F.TYPE_FIXED64: "FIXED64",
    F.TYPE_SFIXED64: "FIXED64", F.TYPE_FLOAT: "FLOAT", F.TYPE_DOUBLE: "DOUBLE",
    F.TYPE_STRING: "STRING_OR_BYTES", F.TYPE_BYTES: "STRING_OR_BYTES",
}


def incompatible_changes(old: descriptor_pb2.FileDescriptorProto, old_dependencies: dict[str, bytes],
                         new: descriptor_pb2.FileDescriptorProto,
                         new_dependencies: dict[str, bytes]) -> list[tuple[str, str]]:
    """(difference, description) of each change that is not backward compatible."""
    diff = _Diff(_Types(old, old_dependencies), _Types(new, new_dependencies))
    diff.compare_files(old, new)
    return [(kind, f"{kind.lower().replace('_', ' ')} at '{path}'")
            for kind, path in diff.differences if kind not in COMPATIBLE]


class _Types:
    """Every message and enum of a schema and its dependencies, by full name."""

    def __init__(self, proto: descriptor_pb2.FileDescriptorProto, dependencies: dict[str, bytes]):
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        self.local: set[str] = set()
        for serialized in dependencies.values():
            self._collect(descriptor_pb2.FileDescriptorProto.FromString(serialized))
        self.local = self._collect(proto)

    def _collect(self, proto: descriptor_pb2.FileDescriptorProto) -> set[str]:
        prefix = f".{proto.package}" if proto.package else ""
        names: set[str] = set()
        pending = [(prefix, message) for message in proto.message_type]
        for enum in proto.enum_type:
            self.enums[f"{prefix}.{enum.name}"] = enum
        while pending:
            scope, message = pending.pop()
            name = f"{scope}.{message.name}"
            self.messages[name] = message
            names.add(name)
            pending.extend((name, nested) for nested in message.nested_type)
            for enum in message.enum_type:
                self.enums[f"{name}.{enum.name}"] = enum
        return names

    def map_entry(self, field: descriptor_pb2.FieldDescriptorProto) -> descriptor_pb2.DescriptorProto | None:
        message = self.messages.get(field.type_name) if field.type == F.TYPE_MESSAGE else None
        return message if message is not None and message.options.map_entry else None


class _Diff:
    def __init__(self, old: _Types, new: _Types):
        self.old, self.new = old, new
        self.differences: list[tuple[str, str]] = []
        self._compared: set[tuple[str, str]] = set()

    def add(self, kind: str, path: str) -> None:
        self.differences.append((kind, path))

    def compare_files(self, old: descriptor_pb2.FileDescriptorProto,
                      new: descriptor_pb2.FileDescriptorProto) -> None:
        if old.package != new.package:
            self.add("PACKAGE_CHANGED", "#/")
        old_top = {name for name in self.old.local if name.count(".") == (old.package.count(".") + 2
                                                                         if old.package else 1)}
        for name in sorted(old_top):
            if name in self.new.local:
                self.compare_messages(name, name)
            elif _local(name, old.package) in {_local(other, new.package) for other in self.new.local}:
                self.add("MESSAGE_MOVED", name)
            else:
                self.add("MESSAGE_REMOVED", name)
        for name in sorted(self.new.local - self.old.local):
            if name.count(".") == (new.package.count(".") + 2 if new.package else 1):
                self.add("MESSAGE_ADDED", name)
        self._compare_enums(old.enum_type, new.enum_type, f".{old.package}" if old.package else "")

    def compare_messages(self, old_name: str, new_name: str) -> None:
        if (old_name, new_name) in self._compared:
            return
        self._compared.add((old_name, new_name))
        old, new = self.old.messages[old_name], self.new.messages[new_name]
        old_fields = {field.number: field for field in old.field}
        new_fields = {field.number: field for field in new.field}
        old_oneofs = _oneof_names(old)
        new_oneofs = _oneof_names(new)
        for name in sorted(set(old_oneofs.values()) ^ set(new_oneofs.values())):
            self.add("ONEOF_REMOVED" if name not in new_oneofs.values() else "ONEOF_ADDED", f"{new_name}/{name}")
        for number in sorted(old_fields.keys() | new_fields.keys()):
            path = f"{new_name}/{number}"
            old_field, new_field = old_fields.get(number), new_fields.get(number)
            old_oneof = old_oneofs.get(number)
            new_oneof = new_oneofs.get(number)
            if new_field is None:
                assert old_field is not None
                if old_oneof is not None:
                    if old_oneof in new_oneofs.values():
                        self.add("ONEOF_FIELD_REMOVED", path)
                else:
                    self.add("REQUIRED_FIELD_REMOVED" if old_field.label == F.LABEL_REQUIRED else "FIELD_REMOVED",
                             path)
            elif old_field is None:
                if new_oneof is not None:
                    self.add("ONEOF_FIELD_ADDED", path)
                else:
                    self.add("REQUIRED_FIELD_ADDED" if new_field.label == F.LABEL_REQUIRED else "FIELD_ADDED",
                             path)
            else:
                if old_oneof is not None and new_oneof is None:
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", path)
                elif old_oneof is None and new_oneof is not None:
                    self.add("FIELD_MOVED_TO_EXISTING_ONEOF", path)
                self._compare_fields(old_field, new_field, path)
        for enum_scope in ((old_name, new_name),):
            self._compare_enums(old.enum_type, new.enum_type, enum_scope[1])

    def _compare_fields(self, old: descriptor_pb2.FieldDescriptorProto,
                        new: descriptor_pb2.FieldDescriptorProto, path: str) -> None:
        if old.name != new.name:
            self.add("FIELD_NAME_CHANGED", path)
        old_entry, new_entry = self.old.map_entry(old), self.new.map_entry(new)
        old_kind, new_kind = _kind(old, old_entry), _kind(new, new_entry)
        if old_kind != new_kind:
            self.add("FIELD_KIND_CHANGED", path)
        elif old_kind == "MAP":
            assert old_entry is not None and new_entry is not None
            for index in (0, 1):
                self._compare_kinds(old_entry.field[index], new_entry.field[index], path, labels=False)
        else:
            self._compare_kinds(old, new, path, labels=True)

    def _compare_kinds(self, old: descriptor_pb2.FieldDescriptorProto,
                       new: descriptor_pb2.FieldDescriptorProto, path: str, labels: bool) -> None:
        if _kind(old, None) != _kind(new, None):
            self.add("FIELD_KIND_CHANGED", path)
        elif old.type == F.TYPE_MESSAGE:
            self._compare_message_types(old.type_name, new.type_name, path)
        else:
            old_scalar, new_scalar = _SCALAR_KINDS[old.type], _SCALAR_KINDS[new.type]
            if old_scalar != new_scalar:
                self.add("FIELD_SCALAR_KIND_CHANGED", path)
            elif labels and (old.label == F.LABEL_REPEATED) != (new.label == F.LABEL_REPEATED):
                self.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if old_scalar == "STRING_OR_BYTES"
                         else "FIELD_NUMERIC_LABEL_CHANGED", path)

    def _compare_message_types(self, old_type: str, new_type: str, path: str) -> None:
        if old_type not in self.old.messages or new_type not in self.new.messages:
            if old_type != new_type:
                self.add("FIELD_NAMED_TYPE_CHANGED", path)
            return
        if old_type.rsplit(".", 1)[-1] != new_type.rsplit(".", 1)[-1]:
            self.add("FIELD_NAMED_TYPE_CHANGED", path)
            return
        before = len(self.differences)
        self.compare_messages(old_type, new_type)
        if any(kind not in COMPATIBLE for kind, _ in self.differences[before:]):
            self.add("FIELD_NAMED_TYPE_CHANGED", path)

    def _compare_enums(self, old: list, new: list, scope: str) -> None:
        old_enums = {enum.name: enum for enum in old}
        new_enums = {enum.name: enum for enum in new}
        for name in sorted(old_enums.keys() | new_enums.keys()):
            path = f"{scope}.{name}"
            if name not in new_enums:
                self.add("ENUM_REMOVED", path)
            elif name not in old_enums:
                self.add("ENUM_ADDED", path)
            else:
                old_values = {value.number: value.name for value in old_enums[name].value}
                new_values = {value.number: value.name for value in new_enums[name].value}
                for number in sorted(old_values.keys() | new_values.keys()):
                    if number not in new_values:
                        self.add("ENUM_CONST_REMOVED", f"{path}/{number}")
                    elif number not in old_values:
                        self.add("ENUM_CONST_ADDED", f"{path}/{number}")
                    elif old_values[number] != new_values[number]:
                        self.add("ENUM_CONST_CHANGED", f"{path}/{number}")


def _kind(field: descriptor_pb2.FieldDescriptorProto, entry: descriptor_pb2.DescriptorProto | None) -> str:
    if entry is not None:
        return "MAP"
    return "MESSAGE" if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP) else "SCALAR"


def _oneof_names(message: descriptor_pb2.DescriptorProto) -> dict[int, str]:
    """Field number -> the real (not proto3-optional) oneof it belongs to."""
    return {field.number: message.oneof_decl[field.oneof_index].name for field in message.field
            if field.HasField("oneof_index") and not field.proto3_optional}


def _local(name: str, package: str) -> str:
    prefix = f".{package}." if package else "."
    return name[len(prefix):] if name.startswith(prefix) else name

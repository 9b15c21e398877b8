"""Message schemas as data, in the shape of Kafka's JSON message specs.

A schema is a list of ``Field(name, type, versions, ...)`` exactly like a
``fields`` entry of apache/kafka ``clients/src/main/resources/common/message/
*.json``: ``type`` is one of int8 int16 int32 int64 uint16 uint32 float64
bool uuid string bytes records, ``[]<type>`` (array) or a CamelCase struct
name with nested ``fields``; ``versions``, ``nullable`` (nullableVersions)
and ``tagged`` (taggedVersions) are version ranges written "3+", "0-4", "2";
``tag`` is the tagged-field number. Field names are the snake_case of the
JSON names. ``Message`` adds the api key and ``flexibleVersions``.

Each struct gets a generated data class with ``__slots__`` for every field
of every version, keyword construction and schema defaults. Defaults when a
field is absent from a version or not given: the spec's ``default`` if any;
otherwise 0 / 0.0 / False, "" or b"" (None when the field is nullable),
the zero UUID, and [] for arrays. A nullable array without a declared
default still defaults to [] and not null: null arrays mean something (a
null Metadata topic list asks for every topic), so null must be explicit.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcore.protocol.primitives import ZERO_UUID

MAX_VERSION = 0x7FFF

# struct module format character of each fixed-width type.
FIXED_FORMATS = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint16": "H", "uint32": "I", "float64": "d", "bool": "?",
}
_FIXED_DEFAULTS = {"float64": 0.0, "bool": False}
VARIABLE_TYPES = frozenset({"string", "bytes", "records", "uuid"})

_UNSET = object()


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """"3+" -> (3, MAX_VERSION), "0-4" -> (0, 4), "2" -> (2, 2), None/"none" -> None."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec in ("", "none"):
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    low, _, high = spec.partition("-")
    return (int(low), int(high)) if high else (int(low), int(low))


def _in(versions: tuple[int, int] | None, version: int) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


class Field:
    """One field of a struct; see the module docstring for the arguments."""

    __slots__ = ("name", "type", "versions", "nullable_versions", "tag", "tagged_versions",
                 "kind", "element", "struct", "explicit_default")

    def __init__(self, name: str, type: str, versions: str, *, nullable: str | None = None,
                 default: Any = _UNSET, tag: int | None = None, tagged: str | None = None,
                 fields: Iterable[Field] | None = None) -> None:
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        if self.versions is None:
            raise ValueError(f"field {name}: no versions")
        self.nullable_versions = parse_versions(nullable)
        self.tag = tag
        self.tagged_versions = parse_versions(tagged)
        if (tag is None) != (self.tagged_versions is None):
            raise ValueError(f"field {name}: tag and tagged versions go together")
        self.explicit_default = default
        base = type[2:] if type.startswith("[]") else type
        self.kind = "array" if type.startswith("[]") else _kind_of(base)
        self.element = _kind_of(base) if self.kind == "array" else None
        self.struct = Struct(base, fields) if fields is not None else None
        if (self.kind == "struct" or self.element == "struct") and self.struct is None:
            raise ValueError(f"field {name}: struct type {base} needs fields")

    @property
    def nested(self) -> Struct:
        """The Struct of a struct or struct-array field (checked at construction)."""
        if self.struct is None:
            raise TypeError(f"field {self.name} holds no struct")
        return self.struct

    def present(self, version: int) -> bool:
        return _in(self.versions, version)

    def nullable(self, version: int) -> bool:
        return _in(self.nullable_versions, version)

    def tagged(self, version: int) -> bool:
        return _in(self.tagged_versions, version)

    @property
    def mutable_default(self) -> bool:
        return self.kind in ("array", "struct") and self.default_value() is not None

    def default_value(self) -> Any:
        """The value of this field when it is absent or not given (a fresh list for arrays)."""
        if self.explicit_default is not _UNSET:
            return self.explicit_default
        kind = self.kind
        if kind == "fixed":
            return _FIXED_DEFAULTS.get(self.type, 0)
        if kind == "array":
            return []
        if kind == "uuid":
            return ZERO_UUID
        if self.nullable_versions is not None:
            return None
        if kind == "string":
            return ""
        if kind == "struct":
            return self.nested.data_class()
        return b""

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r})"


def _kind_of(base: str) -> str:
    if base in FIXED_FORMATS:
        return "fixed"
    if base in VARIABLE_TYPES:
        return base
    if base[:1].isupper():
        return "struct"
    raise ValueError(f"unknown field type {base!r}")


class Struct:
    """A named list of fields; its data class and compiled codecs are built once.

    Compiled codecs are cached per (version, flexible); building one twice
    from two threads is harmless (same result, last write wins).
    """

    def __init__(self, name: str, fields: Iterable[Field], *, flexible: str | None = None) -> None:
        self.name = name
        self.fields: tuple[Field, ...] = tuple(fields)
        self.flexible_versions = parse_versions(flexible)
        self.codecs: dict[tuple, Any] = {}
        self._data_class: type | None = None
        names = [field.name for field in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"struct {name}: duplicate field names")

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible_versions, version)

    @property
    def data_class(self) -> type:
        if self._data_class is None:
            self._data_class = _make_data_class(self)
        return self._data_class

    def substructs(self) -> list[Struct]:
        return [field.struct for field in self.fields if field.struct is not None]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Message(Struct):
    """A request or response body: a struct with an api key and flexible versions."""

    def __init__(self, name: str, *, api_key: int, flexible: str, fields: Iterable[Field]) -> None:
        super().__init__(name, fields, flexible=flexible)
        self.api_key = api_key


_MISSING = object()


def _make_data_class(struct: Struct) -> type:
    """A class with __slots__, keyword __init__ with defaults, __eq__ and __repr__."""
    namespace: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for index, field in enumerate(struct.fields):
        name = field.name
        if field.mutable_default:
            namespace[f"_factory{index}"] = field.default_value
            params.append(f"{name}=_MISSING")
            body.append(f"    self.{name} = _factory{index}() if {name} is _MISSING else {name}")
        else:
            namespace[f"_default{index}"] = field.default_value()
            params.append(f"{name}=_default{index}")
            body.append(f"    self.{name} = {name}")
    signature = ", ".join(["self", "*", *params]) if params else "self"
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(compile(source, f"<kcore.protocol {struct.name}.__init__>", "exec"), namespace)
    names = tuple(field.name for field in struct.fields)
    cls = type(struct.name, (_DataObject,), {
        "__slots__": names,
        "__init__": namespace["__init__"],
        "__schema__": struct,
        "_field_names": names,
    })
    for name, classes in _descendant_classes(struct).items():
        if len(classes) == 1:
            setattr(cls, name, classes[0])
    return cls


def _descendant_classes(struct: Struct) -> dict[str, list[type]]:
    """Data classes of every nested struct by name (ProduceResponse.PartitionProduceResponse)."""
    found: dict[str, list[type]] = {}
    pending = list(struct.substructs())
    while pending:
        sub = pending.pop()
        classes = found.setdefault(sub.name, [])
        if sub.data_class not in classes:
            classes.append(sub.data_class)
        pending.extend(sub.substructs())
    return found


class _DataObject:
    """Base of generated data classes: equality and repr over the schema fields."""

    __slots__ = ()
    _field_names: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name, _MISSING) == getattr(other, name, _MISSING)
                   for name in self._field_names)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name, '<unset>')!r}" for name in self._field_names)
        return f"{type(self).__name__}({shown})"


def to_dict(value: Any) -> Any:
    """Plain dicts and lists from decoded objects (memoryviews become bytes)."""
    if isinstance(value, _DataObject):
        return {name: to_dict(getattr(value, name)) for name in value._field_names}
    if isinstance(value, list):
        return [to_dict(item) for item in value]
    if isinstance(value, memoryview):
        return value.tobytes()
    return value

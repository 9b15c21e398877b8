"""Compiles a struct schema at one version into a Python encode function.

The generated function ``encode(obj, out, splices)`` appends the encoding of
``obj`` to the bytearray ``out``; ``obj`` may be a generated data object, a
plain dict, or any object with the field attributes. Missing fields take the
schema default. Consecutive fixed-width fields are packed by one
precompiled ``struct.Struct.pack``. Records fields go through
``primitives.put_records`` (small buffers inline, the rest spliced).
Fields absent from the version are ignored. Known tagged fields are written
only when they differ from their default (a struct given as a dict differs
when one of its keys holds another value than the struct's default).

Unknown keys (``KCORE_STRICT_KEYS=1``): a dict may then name only fields
that some version of its struct defines; any other key is refused with a
ProtocolEncodeError naming the key and the struct, so a misspelt key in a
handler's answer (``"high_watermak"``) fails where it was written instead
of silently sending the field's default (0, "", null) to the client. Keys
of fields absent from the version being encoded stay accepted: handlers
fill the fields of the highest version and let each version take its own.

Why a check in the encoder rather than typed bodies: about 86 answers
across 50 handlers and their coordinators are dicts, and one check in the
generated code covers all of them, nested structs included, for every
caller (handlers, clients, internal records) without rewriting them; the
hottest answers (Produce, Fetch, Metadata) are also typed with TypedDicts
(protocol/messages/), so mypy refuses their misspelt keys before any test
runs. Why only under a switch: the check (one ``frozenset.issuperset`` of the dict
per struct, ~85 ns for an 8-key dict) makes encoding a 16-partition Fetch
response built from dicts 1.15x as long (12.1 against 10.5 us, fastest of
300 interleaved blocks; bench/bench_protocol.py), a cost the fetch path
need not pay in production. tests/conftest.py sets the variable, and every
broker a test starts inherits it, so every answer a test exercises is
checked. Encoders read the variable when they are first built. Data
objects (``__slots__``) cannot hold an unknown attribute, and other
objects are read by attribute, unchecked.

Bad values surface as struct.error, AttributeError, TypeError or
ProtocolEncodeError; callers turn all of them into ProtocolEncodeError.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

from kcore.protocol import primitives
from kcore.protocol.schema import FIXED_FORMATS, Field, Struct, _DataObject

Encoder = Callable[[Any, bytearray, list], None]

STRICT_KEYS_ENV = "KCORE_STRICT_KEYS"

_NULLS = {"h": "b'\\xff\\xff'", "i": "b'\\xff\\xff\\xff\\xff'"}
_PREFIX = {"string": "h", "bytes": "i", "records": "i", "array": "i"}


def struct_encoder(schema: Struct, version: int, flexible: bool, *,
                   check_keys: bool | None = None) -> Encoder:
    """``check_keys``: whether dicts with unknown keys are refused; None
    (the encoders every caller uses): as ``KCORE_STRICT_KEYS`` says when
    the encoder is first built."""
    key = ("encode", version, flexible, check_keys)
    encoder = schema.codecs.get(key)
    if encoder is None:
        check = strict_keys() if check_keys is None else check_keys
        encoder = _Builder(version, flexible, check).build(schema)
        schema.codecs[key] = encoder
    return encoder


def strict_keys() -> bool:
    """Whether ``KCORE_STRICT_KEYS`` asks for the unknown-key check."""
    return os.environ.get(STRICT_KEYS_ENV, "") == "1"


class _Builder:
    """Generates one struct tree's encoders (object and dict variants)."""

    def __init__(self, version: int, flexible: bool, check_keys: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.check_keys = check_keys
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_getattr": getattr,
            "_dict": dict,
            "_uv": primitives.uvarint,
            "_i16": primitives.INT16.pack,
            "_i32": primitives.INT32.pack,
            "_pack": struct.pack,
            "_put_records": primitives.put_records,
            "_chunk_kind": primitives.chunk_kinds.get,
            "_FILE_SLICE": primitives.FILE_SLICE,
            "_write_tags": primitives.write_tagged_fields,
            "_Error": primitives.ProtocolEncodeError,
            "_unknown_keys": _unknown_keys,
            "_struct_differs": _struct_differs,
        }
        self.counter = 0
        self.done: dict[int, tuple[str, str, str, str]] = {}

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any, prefix: str = "_c") -> str:
        name = self.name(prefix)
        self.namespace[name] = value
        return name

    def build(self, schema: Struct) -> Encoder:
        entry = self.dispatch(schema)
        source = "\n".join(self.lines) + "\n"
        filename = f"<kcore.protocol encode {schema.name} v{self.version}>"
        exec(compile(source, filename, "exec"), self.namespace)
        encoder = self.namespace[entry]
        encoder.__source__ = source
        return encoder

    def variants(self, schema: Struct) -> tuple[str, str, str, str]:
        """Names of (data class, own-class, dict, any-object) encoders of ``schema``.

        Three generated bodies: ``o.name`` for the schema's own data class
        (every slot is set by its __init__ and by the decoder),
        ``o.get(name, default)`` for dicts and ``getattr(o, name, default)``
        for any other object.
        """
        if id(schema) not in self.done:
            own = self.struct_function(schema, "o.{name}")
            by_key = self.struct_function(schema, "o.get('{name}', {default})", check_keys=self.check_keys)
            by_attr = self.struct_function(schema, "_getattr(o, '{name}', {default})")
            self.done[id(schema)] = (self.const(schema.data_class, "_cls"), own, by_key, by_attr)
        return self.done[id(schema)]

    def dispatch(self, schema: Struct) -> str:
        """Name of a function encoding one ``schema`` object of any form."""
        body = self.dispatch_lines(schema, "o", "    ")
        fname = self.name(f"_encode_{schema.name}_")
        self.lines.append(f"def {fname}(o, out, sp):")
        self.lines.extend(body)
        return fname

    def dispatch_lines(self, schema: Struct, value: str, indent: str) -> list[str]:
        cls, own, by_key, by_attr = self.variants(schema)
        return [
            f"{indent}if type({value}) is {cls}:",
            f"{indent}    {own}({value}, out, sp)",
            f"{indent}elif type({value}) is _dict:",
            f"{indent}    {by_key}({value}, out, sp)",
            f"{indent}else:",
            f"{indent}    {by_attr}({value}, out, sp)",
        ]

    def struct_function(self, schema: Struct, getter: str, check_keys: bool = False) -> str:
        version, flexible = self.version, self.flexible
        fname = self.name(f"_encode_{schema.name}_")
        body = _Body(self, "    ")
        present = [f for f in schema.fields if f.present(version)]
        tagged = [f for f in present if flexible and f.tagged(version)]
        if check_keys:  # the dict variant
            names = frozenset(f.name for f in schema.fields)
            known = self.const(names.issuperset, "_known")
            body.emit(f"if not {known}(o): _unknown_keys(o, {self.const(names, '_names')}, {schema.name!r})")
        for field in present:
            if field not in tagged:
                body.field(field, getter.format(name=field.name, default=self.default_const(field)))
        body.flush()
        if flexible:
            self.tag_section(body, tagged, getter)
        self.lines.append(f"def {fname}(o, out, sp):")
        self.lines.extend(body.lines or ["    pass"])
        return fname

    def default_const(self, field: Field) -> str:
        value = field.default_value()
        if isinstance(value, list):
            value = ()
        return self.const(value, "_default")

    def tag_section(self, body: _Body, tagged: list[Field], getter: str) -> None:
        if not tagged:
            body.emit("out += b'\\x00'")
            return
        if getter.startswith("o.get("):
            # A dict without any tagged key (a Fetch answer's partitions, nearly
            # always) writes the empty section at once: one `in` test per
            # tagged field instead of a lookup, a comparison and a list. With
            # the 2-3 byte uvarints inline (primitives.py), a 16-partition
            # Fetch v12 answer encodes in 1.05x v11's time, from 2.07x
            # (fastest of 30 interleaved rounds, bench/bench_protocol.py).
            keys = " or ".join(f"{field.name!r} in o" for field in tagged)
            body.emit(f"if not ({keys}):")
            body.emit("    out += b'\\x00'")
            body.emit("else:")
            body = _Body(self, body.indent + "    ", body.lines)
        body.emit("tags = []")
        for field in tagged:
            default = self.default_const(field)
            body.emit(f"v = {getter.format(name=field.name, default=default)}")
            condition = ("v" if field.kind == "array" else f"_struct_differs(v, {default})"
                         if field.kind == "struct" else f"v != {default}")
            body.emit(f"if {condition}:")
            body.emit("    t = bytearray()")
            body.emit(f"    {self.value_function(field)}(v, t, sp)")
            body.emit(f"    tags.append(({field.tag}, t))")
        body.emit("if tags:")
        body.emit("    _write_tags(out, tags)")
        body.emit("else:")
        body.emit("    out += b'\\x00'")

    def value_function(self, field: Field) -> str:
        """A standalone encoder of one tagged field's value ``v``."""
        fname = self.name(f"_encode_tag_{field.name}_")
        body = _Body(self, "    ")
        body.field(field, "v")
        body.flush()
        self.lines.append(f"def {fname}(v, out, sp):")
        self.lines.extend(body.lines)
        return fname


def _struct_differs(value: Any, default: Any) -> bool:
    """Whether a tagged struct field's value (a data object, a dict or any
    object with the attributes) holds another value than its default data
    object in some field; a field it leaves out takes the default. A
    nullable struct whose default is null differs when it is not null."""
    if default is None or value is None:
        return value is not default
    for name in default._field_names:
        expected = getattr(default, name)
        item = value.get(name, expected) if isinstance(value, dict) else getattr(value, name, expected)
        if item is expected:
            continue
        if isinstance(expected, _DataObject) and item is not None:
            if _struct_differs(item, expected):
                return True
        elif item != expected:
            return True
    return False


def _unknown_keys(obj: dict, names: frozenset[str], struct_name: str) -> None:
    unknown = sorted(str(key) for key in obj if key not in names)
    raise primitives.ProtocolEncodeError(
        f"{struct_name}: no version defines {', '.join(map(repr, unknown))} "
        f"(a misspelt or unknown field)")


class _Body:
    """Statement emitter for one generated encoder body."""

    def __init__(self, builder: _Builder, indent: str, lines: list[str] | None = None) -> None:
        self.builder = builder
        self.indent = indent
        self.lines: list[str] = [] if lines is None else lines
        self.run: list[tuple[str, str]] = []

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def flush(self) -> None:
        if not self.run:
            return
        fmt = ">" + "".join(code for code, _ in self.run)
        pack = self.builder.const(struct.Struct(fmt).pack, "_pack")
        self.emit(f"out += {pack}({', '.join(expr for _, expr in self.run)})")
        self.run = []

    def field(self, field: Field, expr: str) -> None:
        if field.kind == "fixed":
            self.run.append((FIXED_FORMATS[field.type], expr))
            return
        self.flush()
        if expr != "v":
            self.emit(f"v = {expr}")
        nullable = field.nullable(self.builder.version)
        if field.kind == "records":
            self.records(nullable)
            return
        if field.kind == "uuid":
            self.emit("out += v.bytes")
            return
        self.emit("if v is None:")
        if nullable:
            self.emit(f"    out += {self.null_marker(field)}")
        else:
            self.emit(f"    raise _Error('null in non-nullable field {field.name}')")
        self.emit("else:")
        inner = _Body(self.builder, self.indent + "    ")
        inner.value(field)
        self.lines.extend(inner.lines)

    def records(self, nullable: bool) -> None:
        """File slices inline (the Fetch hot path); anything else via put_records."""
        self.emit("if _chunk_kind(type(v)) == _FILE_SLICE:")
        self.emit("    s = v.size")
        self.emit("    if type(s) is not int or s < 0: raise _Error('records file slice size must be an int >= 0')")
        self.emit(f"    out += {self.length('records', 's')}")
        self.emit("    if s: sp.append((len(out), v, s))")
        # A partition with nothing new (most of a full fetch at low rates)
        # answers b"": its length at once, not put_records' four calls.
        self.emit("elif type(v) is bytes and not v:")
        self.emit(f"    out += {self.builder.const(self.empty_records(), '_empty')}")
        self.emit("else:")
        self.emit(f"    _put_records(v, out, sp, {self.builder.flexible}, {nullable})")

    def empty_records(self) -> bytes:
        return primitives.uvarint(1) if self.builder.flexible else primitives.INT32.pack(0)

    def null_marker(self, field: Field) -> str:
        if field.kind == "struct":
            return "b'\\xff'"
        if self.builder.flexible:
            return "b'\\x00'"
        return _NULLS[_PREFIX[field.kind]]

    def length(self, kind: str, size: str) -> str:
        if self.builder.flexible:
            return f"_uv({size} + 1)"
        return f"_i16({size})" if _PREFIX[kind] == "h" else f"_i32({size})"

    def value(self, field: Field) -> None:
        kind = field.kind
        if kind == "string":
            self.emit("b = v.encode()")
            self.emit(f"out += {self.length(kind, 'len(b)')}")
            self.emit("out += b")
        elif kind == "bytes":
            self.emit(f"out += {self.length(kind, 'len(v)')}")
            self.emit("out += v")
        elif kind == "struct":
            if field.nullable(self.builder.version):
                self.emit("out += b'\\x01'")
            self.lines.extend(self.builder.dispatch_lines(field.nested, "v", self.indent))
        else:
            self.array(field)

    def array(self, field: Field) -> None:
        self.emit(f"out += {self.length('array', 'len(v)')}")
        element = field.element
        if element == "fixed":
            code = FIXED_FORMATS[field.type[2:]]
            self.emit(f"out += _pack('>%d{code}' % len(v), *v)")
            return
        self.emit("for x in v:")
        if element == "struct":
            self.lines.extend(self.builder.dispatch_lines(field.nested, "x", self.indent + "    "))
        elif element == "string":
            self.emit("    b = x.encode()")
            self.emit(f"    out += {self.length('string', 'len(b)')}")
            self.emit("    out += b")
        elif element == "bytes":
            self.emit(f"    out += {self.length('bytes', 'len(x)')}")
            self.emit("    out += x")
        elif element == "uuid":
            self.emit("    out += x.bytes")
        else:
            raise ValueError(f"arrays of {element} are not a Kafka type")

"""Record values decoded through the schema registry into the columns of
their schema, for a ``value_schema`` table (docs/tables.md).

Framing, Confluent's wire format (what its serializers write and the
produce-side validation reads, kcore/log/log_validator.py rule 4)::

    byte 0       magic byte 0
    bytes 1..4   schema id, big-endian (read unsigned, as the validation does)
    PROTOBUF     message indexes: the path of the message in its .proto
                 file (top-level message, then nested ones), as a zigzag
                 varint count and that many zigzag varints; the path [0],
                 the first message, is the single byte 0
    the rest     the payload: Avro binary, UTF-8 JSON, a Protobuf message

The indexes can be skipped only once the schema type is known, and that
takes the id looked up, so reading a value is two steps: ``schema_id_of``
first, then ``body_of(value, schema_type)`` (with ``message_indexes_of``
naming the Protobuf message); ``split_framing`` does both when the caller
already knows the type.

Columns: ``ValueSchema`` turns a parsed schema (the registry's own parse,
kcore/schema_registry/schema_types.py, references resolved) into an
Iceberg schema of optional columns and decodes payloads into rows that
``pa.Table.from_pylist`` takes with ``arrow_schema()``. A record (Avro),
an object with properties (JSON Schema) or a message (Protobuf) gives one
column per field; any other schema gives the one column ``value``. What
has no column in Iceberg (an Avro union of several types, a recursive
type) raises DecodeError when the ValueSchema is built; a payload that
does not decode with its schema raises DecodeError from ``decode``, with
a reason fit for a dead-letter table.

Runs in the table writer's worker thread (pyarrow, pyiceberg, avro and
protobuf do the work). A ValueSchema is not changed after it is built;
``decode`` keeps no state between calls.
"""
from __future__ import annotations

import datetime
import decimal
import io
import json
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import avro.io
import avro.schema
import pyarrow as pa
import referencing.exceptions
from google.protobuf import descriptor, descriptor_pool, message_factory
from google.protobuf import message as protobuf_message
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from kcore.schema_registry.avro_schema import AvroSchema
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.json_schema import JsonSchema
from kcore.schema_registry.protobuf_schema import WELL_KNOWN, ProtobufSchema
from kcore.schema_registry.schema_types import PROTOBUF, ParsedSchema, ResolvedReference, parse

MAGIC_BYTE = 0
HEADER_SIZE = 5  # magic byte and schema id
# The column of a value whose schema is not a record, object or message.
VALUE_COLUMN = "value"
# Iceberg's widest decimal (decimal128).
MAX_DECIMAL_PRECISION = 38
# A varint of a 64-bit number takes at most 10 bytes.
MAX_VARINT_BYTES = 10
# $ref chains followed, and JSON Schema objects nested, at most this deep:
# a chain longer than that loops, a deeper nesting becomes JSON text.
MAX_JSON_DEPTH = 64
LONG_MIN, LONG_MAX = -2**63, 2**63 - 1
EPOCH = datetime.datetime(1970, 1, 1)
# A \u escape of a UTF-16 surrogate: json.loads lets a lone one through, and
# Arrow refuses the whole batch of a string that holds one.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# A decoded value (never None) as the Arrow column takes it; None where
# the decoded value is taken as it is.
Convert = Callable[[Any], Any]
Column = tuple[IcebergType, Convert | None]


class DecodeError(Exception):
    """Why a value (or a schema) gives no row: ``reason``, and the dotted
    ``field`` it concerns when there is one. str() is the whole reason."""

    def __init__(self, reason: str, field: str | None = None):
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason = reason
        self.field = field

    def within(self, name: str) -> DecodeError:
        return DecodeError(self.reason, f"{name}.{self.field}" if self.field else name)


# -- framing ------------------------------------------------------------------
def schema_id_of(value: bytes | None) -> int:
    """The schema id of a framed value; DecodeError for a null value, one
    shorter than the header or without the magic byte."""
    return int.from_bytes(_framed(value)[1:HEADER_SIZE], "big")


def message_indexes_of(value: bytes | None) -> tuple[int, ...]:
    """The message indexes of a framed Protobuf value."""
    return _message_indexes(value)[0]


def body_of(value: bytes | None, schema_type: str | None = None) -> bytes:
    """The payload of a framed value of ``schema_type`` (None: not Protobuf)."""
    framed = _framed(value)
    if schema_type == PROTOBUF:
        return bytes(framed[_message_indexes(framed)[1]:])
    return bytes(framed[HEADER_SIZE:])


def split_framing(value: bytes | None, schema_type: str | None = None) -> tuple[int, bytes]:
    """(schema id, payload) of a framed value of a known ``schema_type``."""
    return schema_id_of(value), body_of(value, schema_type)


def _framed(value: bytes | None) -> bytes:
    if value is None:
        raise DecodeError("the value is null")
    if len(value) < HEADER_SIZE:
        raise DecodeError(f"the value has {len(value)} bytes, fewer than the {HEADER_SIZE} of the schema id header")
    if value[0] != MAGIC_BYTE:
        raise DecodeError(f"the value starts with byte {value[0]}, not the magic byte {MAGIC_BYTE}")
    return value


def _message_indexes(value: bytes | None) -> tuple[tuple[int, ...], int]:
    value = _framed(value)
    count, position = _zigzag_varint(value, HEADER_SIZE)
    if count == 0:
        return (0,), position
    # Each index takes a byte at least: a larger count is not Confluent's.
    if count < 0 or count > len(value) - position:
        raise DecodeError(f"the Protobuf message index count {count} does not fit the value")
    indexes = []
    for _ in range(count):
        index, position = _zigzag_varint(value, position)
        indexes.append(index)
    return tuple(indexes), position


def _zigzag_varint(value: bytes, position: int) -> tuple[int, int]:
    result = 0
    for shift in range(0, 7 * MAX_VARINT_BYTES, 7):
        if position >= len(value):
            raise DecodeError("the Protobuf message indexes are cut short")
        byte = value[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
    raise DecodeError(f"a Protobuf message index runs past {MAX_VARINT_BYTES} bytes")


# -- the value's columns --------------------------------------------------------
class _Ids:
    """Field ids, unique within one schema, in the order fields are met."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


class ValueSchema:
    """The columns of a registered schema and the decoding of its values.
    PROTOBUF values are those of the message at ``message_indexes``."""

    def __init__(self, parsed: ParsedSchema, message_indexes: Sequence[int] = (0,)):
        self.schema_type = parsed.schema_type
        ids = _Ids()
        read: Callable[[bytes], Any]
        if isinstance(parsed, AvroSchema):
            column, read = _avro_column(parsed.schema, ids, frozenset()), _avro_reader(parsed.schema)
            record = parsed.schema.type in ("record", "error")
        elif isinstance(parsed, JsonSchema):
            column, read = _json_column(parsed.document, parsed.resolver(), ids, frozenset()), _json_read
            record = isinstance(column[0], StructType)
        elif isinstance(parsed, ProtobufSchema):
            message_class = _protobuf_class(parsed, message_indexes)
            column, read = _protobuf_struct(message_class.DESCRIPTOR, ids, frozenset()), message_class.FromString
            record = True
        else:
            raise DecodeError(f"{parsed.schema_type} values are not decoded into columns")
        if column is None:
            raise DecodeError(f"the {self.schema_type} schema has no columns")
        field_type, convert = column
        self._convert: Convert
        if record:
            assert isinstance(field_type, StructType)
            self._schema = Schema(*field_type.fields)
            self._convert = _row(convert)
        else:
            self._schema = Schema(NestedField(ids.next(), VALUE_COLUMN, field_type, required=False))
            self._convert = _single_column(convert)
        self._read = read
        # Without field ids: the table's ids are its own once this schema is
        # merged (union_by_name), and pyiceberg matches such Arrow by name.
        self._arrow = schema_to_pyarrow(self._schema, include_field_ids=False)

    @classmethod
    def parse(cls, schema_type: str, text: str, references: Sequence[ResolvedReference] = (),
              message_indexes: Sequence[int] = (0,)) -> ValueSchema:
        try:
            parsed = parse(schema_type, text, references)
        except RegistryError as exc:
            raise DecodeError(exc.message) from None
        return cls(parsed, message_indexes)

    def iceberg_schema(self) -> Schema:
        return self._schema

    def arrow_schema(self) -> pa.Schema:
        return self._arrow

    def decode(self, body: bytes) -> dict[str, Any]:
        """The row of one payload (the framing taken off)."""
        try:
            value = self._read(body)
        except DecodeError:
            raise
        except Exception as exc:  # the libraries raise many kinds on bad bytes
            raise DecodeError(f"the value does not decode as {self.schema_type}: {exc or type(exc).__name__}") \
                from None
        try:
            return self._convert(value)
        except DecodeError:
            raise
        except Exception as exc:  # a decoded value out of its column's range
            raise DecodeError(f"the value does not convert: {exc or type(exc).__name__}") from None


def _row(convert: Convert | None) -> Convert:
    def row(value: Any) -> Any:
        if value is None:
            raise DecodeError("the value decodes to null, not a row")
        return convert(value) if convert else value
    return row


def _single_column(convert: Convert | None) -> Convert:
    if convert is None:
        return lambda value: {VALUE_COLUMN: value}
    return lambda value: {VALUE_COLUMN: None if value is None else convert(value)}


def _struct_type(fields: Sequence[tuple[int, str, Column]]) -> IcebergType:
    return StructType(*(NestedField(field_id, name, field_type, required=False)
                        for field_id, name, (field_type, _) in fields))


def _convert_fields(fields: Iterable[tuple[str, Convert]]) -> Convert | None:
    """A decoded dict (a fresh one of the decoder's) with its fields
    converted in place; None when no field needs it."""
    converters = tuple(fields)
    if not converters:
        return None

    def convert(value: dict[str, Any]) -> dict[str, Any]:
        for name, convert_field in converters:
            item = value.get(name)
            if item is not None:
                try:
                    value[name] = convert_field(item)
                except DecodeError as exc:
                    raise exc.within(name) from None
        return value
    return convert


def _each(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda items: [None if item is None else convert(item) for item in items]


def _each_value(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda items: {key: None if item is None else convert(item) for key, item in items.items()}


# -- Avro -----------------------------------------------------------------------
_AVRO_PRIMITIVES: dict[str, Callable[[], IcebergType]] = {
    "boolean": BooleanType, "int": IntegerType, "long": LongType, "float": FloatType, "double": DoubleType,
    "bytes": BinaryType, "string": StringType, "enum": StringType, "fixed": BinaryType}


def _avro_column(schema: avro.schema.Schema, ids: _Ids, records: frozenset[str]) -> Column | None:
    """The column of an Avro type; None for one that holds nothing (null)."""
    if isinstance(schema, avro.schema.UnionSchema):
        branches = [branch for branch in schema.schemas if branch.type != "null"]
        if len(branches) > 1:
            names = ", ".join(_avro_name(branch) for branch in schema.schemas)
            raise DecodeError(f"the Avro union [{names}] has no column: only a union of null and one "
                              f"type has one")
        return _avro_column(branches[0], ids, records) if branches else None
    logical = _avro_logical(schema)
    if logical is not None:
        return logical
    kind = schema.type
    if kind == "null":
        return None
    if kind in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[kind](), None
    if isinstance(schema, avro.schema.ArraySchema):
        element_id = ids.next()
        element = _avro_column(schema.items, ids, records)
        if element is None:
            return None
        return ListType(element_id, element[0], element_required=False), _each(element[1])
    if isinstance(schema, avro.schema.MapSchema):
        key_id, value_id = ids.next(), ids.next()
        values = _avro_column(schema.values, ids, records)
        if values is None:
            return None
        return (MapType(key_id, StringType(), value_id, values[0], value_required=False),
                _each_value(values[1]))
    if isinstance(schema, avro.schema.RecordSchema):
        return _avro_record(schema, ids, records)
    raise DecodeError(f"the Avro type {kind} has no column")


def _avro_record(schema: avro.schema.RecordSchema, ids: _Ids, records: frozenset[str]) -> Column | None:
    if schema.fullname in records:
        raise DecodeError(f"the Avro record {schema.fullname} contains itself: a recursive type has no columns")
    inside = records | {schema.fullname}
    fields = []
    for field in schema.fields:
        field_id = ids.next()
        column = _avro_column(field.type, ids, inside)
        if column is not None:
            fields.append((field_id, field.name, column))
    if not fields:
        return None
    return _struct_type(fields), _convert_fields((name, convert) for _, name, (_, convert) in fields if convert)


def _avro_name(schema: avro.schema.Schema) -> str:
    return schema.fullname if isinstance(schema, avro.schema.NamedSchema) else schema.type


def _avro_logical(schema: avro.schema.Schema) -> Column | None:
    """The column of a logical type; None for none. avro decodes those it
    knows (date, time, timestamp, decimal, string uuid) into Python's
    types already; the rest are decoded here from the underlying type."""
    if isinstance(schema, avro.schema.BytesDecimalSchema | avro.schema.FixedDecimalSchema):
        precision, scale = schema.precision, schema.scale or 0
        if precision > MAX_DECIMAL_PRECISION:
            raise DecodeError(f"the Avro decimal({precision}, {scale}) is wider than Iceberg's "
                              f"decimal({MAX_DECIMAL_PRECISION})")
        return DecimalType(precision, scale), _decimal_within(precision, scale)
    if isinstance(schema, avro.schema.DateSchema):
        return DateType(), None
    if isinstance(schema, avro.schema.TimeMillisSchema | avro.schema.TimeMicrosSchema):
        return TimeType(), None
    if isinstance(schema, avro.schema.TimestampMillisSchema | avro.schema.TimestampMicrosSchema):
        return TimestamptzType(), None
    if isinstance(schema, avro.schema.UUIDSchema):
        return UUIDType(), _uuid_of_text
    logical = schema.get_prop("logicalType")
    if schema.type == "long" and logical == "local-timestamp-millis":
        return TimestampType(), _local_timestamp_millis
    if schema.type == "long" and logical == "local-timestamp-micros":
        return TimestampType(), _local_timestamp_micros
    if isinstance(schema, avro.schema.FixedSchema) and logical == "uuid" and schema.size == 16:
        return UUIDType(), _uuid_of_bytes
    return None


def _decimal_within(precision: int, scale: int) -> Convert:
    """Avro's decimal bytes hold any unscaled number; Arrow refuses the
    whole batch of one with more digits than the column's precision."""
    limit = 10 ** precision

    def within(value: decimal.Decimal) -> decimal.Decimal:
        if abs(int(value.scaleb(scale))) >= limit:
            raise DecodeError(f"{value:f} has more digits than decimal({precision}, {scale})")
        return value
    return within


def _uuid_of_text(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise DecodeError(f"{value!r} is not a UUID") from None


def _uuid_of_bytes(value: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=value)


def _local_timestamp_millis(value: int) -> datetime.datetime:
    return EPOCH + datetime.timedelta(milliseconds=value)


def _local_timestamp_micros(value: int) -> datetime.datetime:
    return EPOCH + datetime.timedelta(microseconds=value)


def _avro_reader(schema: avro.schema.Schema) -> Callable[[bytes], Any]:
    reader = avro.io.DatumReader(schema)

    def read(body: bytes) -> Any:
        stream = io.BytesIO(body)
        value = reader.read(avro.io.BinaryDecoder(stream))
        # Confluent's deserializers stop at the end of the datum; bytes
        # past it mean the value was written with another schema.
        if stream.tell() != len(body):
            raise DecodeError(f"{len(body) - stream.tell()} trailing bytes after the Avro value")
        return value
    return read


# -- JSON Schema -----------------------------------------------------------------
def _json_read(body: bytes) -> Any:
    try:
        value = json.loads(body)
        if SURROGATE_ESCAPE.search(body):
            json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise DecodeError("the value holds a lone UTF-16 surrogate, which is no Unicode text") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"the value is not JSON: {exc}") from None
    return value


def _json_column(node: Any, resolver: Any, ids: _Ids, outer: frozenset[int]) -> Column:
    """The column of a JSON Schema: a typed one where ``type`` names one
    type (and ``null``), the value's JSON text otherwise; ``outer`` are the
    schemas (by identity) this one is inside of, so a recursive schema
    becomes JSON text where it recurs."""
    node, resolver = _json_dereferenced(node, resolver)
    if id(node) in outer or len(outer) > MAX_JSON_DEPTH:
        return StringType(), _json_text
    inside = outer | {id(node)}
    kind = node.get("type") if isinstance(node, dict) else None
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind in _JSON_PRIMITIVES:
        field_type, convert = _JSON_PRIMITIVES[kind]
        return field_type(), convert
    if kind == "array" and isinstance(node.get("items"), dict | bool):
        element_id = ids.next()
        element_type, convert_element = _json_column(node["items"], resolver, ids, inside)
        return ListType(element_id, element_type, element_required=False), _json_list(convert_element)
    properties = node.get("properties") if kind == "object" else None
    if isinstance(properties, dict) and properties:
        fields = []
        for name, property_node in properties.items():
            field_id = ids.next()
            fields.append((field_id, name, _json_column(property_node, resolver, ids, inside)))
        return _struct_type(fields), _json_object([(name, convert) for _, name, (_, convert) in fields])
    return StringType(), _json_text


def _json_dereferenced(node: Any, resolver: Any) -> tuple[Any, Any]:
    """The schema a ``$ref`` chain leads to, with the resolver of its
    document; ``True`` (any value: the JSON text) for a chain that loops
    or does not resolve."""
    for _ in range(MAX_JSON_DEPTH):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node, resolver
        try:
            resolved = resolver.lookup(node["$ref"])
        except referencing.exceptions.Unresolvable:
            return True, resolver
        node, resolver = resolved.contents, resolved.resolver
    return True, resolver


def _wrong_json(expected: str, value: Any) -> DecodeError:
    found = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number"}.get(type(value), type(value).__name__)
    return DecodeError(f"expected {expected}, found {found}")


def _json_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _wrong_json("a string", value)


def _json_integer(value: Any) -> int:
    # JSON Schema's integer is a number without a fraction: 1.0 is one.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if LONG_MIN <= value <= LONG_MAX:
            return value
        raise DecodeError(f"the integer {value} does not fit a long")
    raise _wrong_json("an integer", value)


def _json_number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise _wrong_json("a number", value)


def _json_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _wrong_json("a boolean", value)


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_JSON_PRIMITIVES: dict[str, tuple[Callable[[], IcebergType], Convert]] = {
    "string": (StringType, _json_string), "integer": (LongType, _json_integer),
    "number": (DoubleType, _json_number), "boolean": (BooleanType, _json_boolean)}


def _json_list(convert: Convert | None) -> Convert:
    each = _each(convert)

    def convert_list(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _wrong_json("an array", value)
        return each(value) if each else value
    return convert_list


def _json_object(fields: Sequence[tuple[str, Convert | None]]) -> Convert:
    def convert_object(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _wrong_json("an object", value)
        row = {}
        for name, convert in fields:
            item = value.get(name)
            try:
                row[name] = None if item is None or convert is None else convert(item)
            except DecodeError as exc:
                raise exc.within(name) from None
        return row
    return convert_object


# -- Protobuf -----------------------------------------------------------------------
FieldType = descriptor.FieldDescriptor
_PROTOBUF_SCALARS: dict[int, tuple[Callable[[], IcebergType], Convert | None]] = {
    FieldType.TYPE_DOUBLE: (DoubleType, None), FieldType.TYPE_FLOAT: (FloatType, None),
    FieldType.TYPE_INT32: (IntegerType, None), FieldType.TYPE_SINT32: (IntegerType, None),
    FieldType.TYPE_SFIXED32: (IntegerType, None),
    FieldType.TYPE_INT64: (LongType, None), FieldType.TYPE_SINT64: (LongType, None),
    FieldType.TYPE_SFIXED64: (LongType, None),
    # Unsigned: uint32 fits a long; uint64 needs 20 digits.
    FieldType.TYPE_UINT32: (LongType, None), FieldType.TYPE_FIXED32: (LongType, None),
    FieldType.TYPE_UINT64: (lambda: DecimalType(20, 0), decimal.Decimal),
    FieldType.TYPE_FIXED64: (lambda: DecimalType(20, 0), decimal.Decimal),
    FieldType.TYPE_BOOL: (BooleanType, None), FieldType.TYPE_STRING: (StringType, None),
    FieldType.TYPE_BYTES: (BinaryType, None)}
TIMESTAMP_MESSAGE = "google.protobuf.Timestamp"


def _protobuf_class(parsed: ProtobufSchema, message_indexes: Sequence[int]) -> Any:
    """The message class of the message at ``message_indexes``, from a pool
    of the schema and its dependencies, each after what it imports."""
    pool = descriptor_pool.DescriptorPool()
    for name, serialized in WELL_KNOWN.items():
        if name in parsed.dependencies:
            pool.AddSerializedFile(serialized)
    for name, serialized in parsed.dependencies.items():
        if name not in WELL_KNOWN:
            pool.AddSerializedFile(serialized)
    pool.AddSerializedFile(parsed.proto.SerializeToString())
    names = [parsed.proto.package] if parsed.proto.package else []
    messages = parsed.proto.message_type
    for index in message_indexes:
        if not 0 <= index < len(messages):
            raise DecodeError(f"the message indexes {list(message_indexes)} name no message of the schema")
        names.append(messages[index].name)
        messages = messages[index].nested_type
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(".".join(names)))


def _protobuf_struct(message: descriptor.Descriptor, ids: _Ids, messages: frozenset[str]) -> Column | None:
    if message.full_name == TIMESTAMP_MESSAGE:
        return TimestamptzType(), _protobuf_timestamp
    if message.full_name in messages:
        raise DecodeError(f"the Protobuf message {message.full_name} contains itself: a recursive type has no "
                          f"columns")
    inside = messages | {message.full_name}
    fields = []
    readers = []
    for field in message.fields:
        field_id = ids.next()
        column = _protobuf_field(field, ids, inside)
        if column is not None:
            fields.append((field_id, field.name, column))
            readers.append((field.name, _protobuf_reader(field, column[1])))
    if not fields:
        return None

    def convert(value: protobuf_message.Message) -> dict[str, Any]:
        row = {}
        for name, read in readers:
            try:
                row[name] = read(value)
            except DecodeError as exc:
                raise exc.within(name) from None
        return row
    return _struct_type(fields), convert


def _protobuf_field(field: descriptor.FieldDescriptor, ids: _Ids, messages: frozenset[str]) -> Column | None:
    """The column of a field; the reader (``_protobuf_reader``) handles
    presence, repetition and maps, so its converter takes one value."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key_id, value_id = ids.next(), ids.next()
        key_type = _PROTOBUF_SCALARS[field.message_type.fields_by_name["key"].type][0]()
        values = _protobuf_value(field.message_type.fields_by_name["value"], ids, messages)
        if values is None:
            return None
        return MapType(key_id, key_type, value_id, values[0], value_required=False), values[1]
    if field.is_repeated:
        element_id = ids.next()
        element = _protobuf_value(field, ids, messages)
        if element is None:
            return None
        return ListType(element_id, element[0], element_required=False), element[1]
    return _protobuf_value(field, ids, messages)


def _protobuf_value(field: descriptor.FieldDescriptor, ids: _Ids, messages: frozenset[str]) -> Column | None:
    if field.type in (FieldType.TYPE_MESSAGE, FieldType.TYPE_GROUP):
        return _protobuf_struct(field.message_type, ids, messages)
    if field.type == FieldType.TYPE_ENUM:
        return StringType(), _protobuf_enum(field.enum_type)
    field_type, convert = _PROTOBUF_SCALARS[field.type]
    return field_type(), convert


def _protobuf_reader(field: descriptor.FieldDescriptor, convert: Convert | None) -> Callable[[Any], Any]:
    name = field.name
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key_convert = _PROTOBUF_SCALARS[field.message_type.fields_by_name["key"].type][1]
        return lambda value: {key_convert(key) if key_convert else key: convert(item) if convert else item
                              for key, item in getattr(value, name).items()}
    if field.is_repeated:
        return lambda value: [convert(item) for item in getattr(value, name)] if convert else list(getattr(value, name))
    if field.has_presence:
        return lambda value: ((convert(getattr(value, name)) if convert else getattr(value, name))
                              if value.HasField(name) else None)
    return lambda value: convert(getattr(value, name)) if convert else getattr(value, name)


def _protobuf_enum(enum: descriptor.EnumDescriptor) -> Convert:
    names = {number: value.name for number, value in enum.values_by_number.items()}
    # An open (proto3) enum keeps numbers it has no name for.
    return lambda number: names.get(number, str(number))


def _protobuf_timestamp(value: Any) -> datetime.datetime:
    return value.ToDatetime(tzinfo=datetime.UTC)

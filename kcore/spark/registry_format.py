"""Values decoded through a schema registry: the source options
``valueFormat`` (``binary``, the default; ``avro``; ``json``) and
``schema.registry.url`` (Confluent's REST API: any kcore broker's
``schema.registry.listeners``, or Confluent's registry).

The planner reads the subject's latest version (``valueSubject``, by
default ``<topic>-value`` of the one topic ``subscribe`` names: Confluent's
TopicNameStrategy) and makes the ``value`` column a struct of the schema's
fields, so ``df.select("value.*")`` has the schema's columns. The
executors decode each value in Confluent's wire format (magic byte 0, a
4-byte schema id, the payload): Avro with the id's (writer) schema resolved
to the latest (reader) one, as an Avro consumer does, so values written
with older versions read with the newest columns; JSON by the latest
schema's top-level properties. A null value stays null; a value without the
wire format, or one that does not decode, fails the task naming its offset.

Types: Avro's primitives, enums (string), fixed (binary), records, arrays,
maps and unions of null with one type (nullable), and the logical types
date, timestamp-millis/micros and decimal; JSON Schema's string, integer
(long), number (double), boolean, object and array. Anything else is an
error at planning, before a task runs.

Layer: beside the other spark/ modules; standalone from the broker (HTTP
only).
"""
from __future__ import annotations

import base64
import io
import json
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from kcore.spark.options import OptionError

FORMATS = ("binary", "avro", "json")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
HTTP_TIMEOUT_S = 30
# Writer schemas an executor keeps parsed (one per id its values carry).
MAX_CACHED_SCHEMAS = 1000
_AVRO_PRIMITIVES = {"null": "void", "boolean": "boolean", "int": "int", "long": "bigint", "float": "float",
                    "double": "double", "bytes": "binary", "string": "string"}
_JSON_TYPES = {"string": "string", "integer": "bigint", "number": "double", "boolean": "boolean"}


@dataclass
class RegistryValueFormat:
    """What executors need to decode values: picklable (no client)."""

    format: str
    url: str
    subject: str
    latest: str  # the reader schema's text
    value_type: str  # the Spark DDL of the value column
    auth: str | None = None  # user:password for basic auth
    _writers: dict[int, Any] = field(default_factory=dict, repr=False)
    _reader: Any = field(default=None, repr=False)
    _latest_json: Any = field(default=None, repr=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_writers": {}, "_reader": None, "_latest_json": None}

    def decode(self, value: bytes | None, where: str) -> Any:
        if value is None:
            return None
        if len(value) < 5 or value[0] != 0:
            raise ValueError(f"{where}: the value is not in Confluent's wire format (magic byte 0 and "
                             f"a 4-byte schema id), so valueFormat={self.format} cannot decode it")
        schema_id = int.from_bytes(value[1:5], "big")
        try:
            if self._latest_json is None:
                self._latest_json = json.loads(self.latest)
            if self.format == "json":
                return _json_row(json.loads(value[5:]), self._latest_json)
            decoded = fastavro.schemaless_reader(io.BytesIO(value[5:]), self._writer(schema_id),
                                                 self._reader_schema())
            return _avro_row(decoded, self._latest_json, {})
        except (ValueError, TypeError, KeyError, IndexError, EOFError, fastavro.read.SchemaResolutionError) as exc:
            raise ValueError(f"{where}: the value (schema id {schema_id}) does not decode: {exc}") from None

    def _reader_schema(self) -> Any:
        if self._reader is None:
            self._reader = fastavro.parse_schema(json.loads(self.latest))
        return self._reader

    def _writer(self, schema_id: int) -> Any:
        parsed = self._writers.get(schema_id)
        if parsed is None:
            text = get(self.url, f"/schemas/ids/{schema_id}", self.auth)["schema"]
            parsed = fastavro.parse_schema(json.loads(text))
            if len(self._writers) >= MAX_CACHED_SCHEMAS:
                self._writers.clear()
            self._writers[schema_id] = parsed
        return parsed


def get(url: str, path: str, auth: str | None) -> Any:
    headers = {"Accept": CONTENT_TYPE}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    request = urllib.request.Request(url.rstrip("/") + path, headers=headers)
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
        return json.loads(answer.read())


def value_format(options: Mapping[str, str]) -> RegistryValueFormat | None:
    """The decoding the source options ask for; None for binary."""
    opts = {key.lower(): value for key, value in options.items()}
    kind = opts.get("valueformat", "binary").strip().lower()
    if kind not in FORMATS:
        raise OptionError(f"option 'valueFormat' must be one of {', '.join(FORMATS)}, got {kind!r}")
    if kind == "binary":
        return None
    url = opts.get("schema.registry.url", "").strip()
    if not url:
        raise OptionError(f"valueFormat={kind} needs option 'schema.registry.url'")
    subject = opts.get("valuesubject", "").strip()
    if not subject:
        topics = [t.strip() for t in opts.get("subscribe", "").split(",") if t.strip()]
        if len(topics) != 1:
            raise OptionError(f"valueFormat={kind} needs option 'valueSubject' unless 'subscribe' names one topic")
        subject = f"{topics[0]}-value"
    auth = opts.get("schema.registry.basic.auth.user.info") or None
    try:
        latest = get(url, f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest", auth)
    except OSError as exc:
        raise OptionError(f"the latest version of subject {subject!r} at {url}: {exc}") from None
    schema_type = latest.get("schemaType", "AVRO")
    if (kind, schema_type) not in (("avro", "AVRO"), ("json", "JSON")):
        raise OptionError(f"subject {subject!r} holds a {schema_type} schema, not valueFormat={kind}")
    parsed = json.loads(latest["schema"])
    value_type = _avro_type(parsed, {}) if kind == "avro" else _json_type(parsed)
    if not value_type.startswith("struct<"):
        raise OptionError(f"subject {subject!r}: the value schema must be a record (object), not {value_type}")
    return RegistryValueFormat(kind, url, subject, latest["schema"], value_type, auth)


def _avro_type(schema: Any, named: dict[str, str]) -> str:
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise OptionError(f"Avro type {schema!r} is not known")
    if isinstance(schema, list):
        others = [branch for branch in schema if branch != "null"]
        if len(others) != 1:
            raise OptionError(f"Avro union {schema!r}: only a union of null and one type maps to a Spark column")
        return _avro_type(others[0], named)
    logical = schema.get("logicalType")
    kind = schema["type"]
    if logical == "date" and kind == "int":
        return "date"
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return "timestamp"
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return f"decimal({schema['precision']},{schema.get('scale', 0)})"
    if kind == "record":
        fields = ", ".join(f"`{f['name']}`: {_avro_type(f['type'], named)}" for f in schema["fields"])
        named[schema["name"]] = f"struct<{fields}>"
        return named[schema["name"]]
    if kind == "enum":
        return "string"
    if kind == "fixed":
        return "binary"
    if kind == "array":
        return f"array<{_avro_type(schema['items'], named)}>"
    if kind == "map":
        return f"map<string, {_avro_type(schema['values'], named)}>"
    return _avro_type(kind, named)


def _avro_row(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    """fastavro's value as Spark takes it, walked by the reader schema:
    records (dicts, as maps are) become struct tuples in field order."""
    if value is None:
        return None
    if isinstance(schema, str):
        return _avro_row(value, named[schema], named) if schema in named else value
    if isinstance(schema, list):
        return _avro_row(value, next(branch for branch in schema if branch != "null"), named)
    kind = schema["type"]
    if isinstance(kind, (dict, list)):
        return _avro_row(value, kind, named)
    if kind == "record":
        for name in (schema["name"], f"{schema.get('namespace')}.{schema['name']}"):
            named[name] = schema
        return tuple(_avro_row(value.get(f["name"]), f["type"], named) for f in schema["fields"])
    if kind == "array":
        return [_avro_row(item, schema["items"], named) for item in value]
    if kind == "map":
        return {key: _avro_row(item, schema["values"], named) for key, item in value.items()}
    return value


def _json_type(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        kind = others[0] if len(others) == 1 else None
    if kind == "object":
        properties = schema.get("properties") or {}
        if not properties:
            raise OptionError("a JSON Schema object without properties has no columns")
        fields = ", ".join(f"`{name}`: {_json_type(sub)}" for name, sub in properties.items())
        return f"struct<{fields}>"
    if kind == "array":
        return f"array<{_json_type(schema.get('items') or {})}>"
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    raise OptionError(f"JSON Schema type {kind!r} does not map to a Spark column")


def _json_row(value: Any, schema: dict) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if value is None:
        return None
    if kind == "object":
        return tuple(_json_row(value.get(name), sub) for name, sub in (schema.get("properties") or {}).items())
    if kind == "array":
        return [_json_row(item, schema.get("items") or {}) for item in value]
    return value

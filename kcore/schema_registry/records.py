"""The records of the ``_schemas`` topic, in Confluent Schema Registry's
layout, so a registry reads the topic another wrote.

Keys and values are JSON (UTF-8), keys with their fields in Confluent's
order and empty fields left out (Jackson ``NON_EMPTY``)::

    {"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}
        -> {"subject":"orders-value","version":1,"id":1,"schemaType":"JSON",
            "references":[...],"schema":"...","deleted":false}
           (schemaType left out for AVRO, references when empty);
           null: the version is deleted permanently
    {"keytype":"CONFIG","magic":0}               (the global config)
    {"keytype":"CONFIG","subject":"s","magic":0} -> {"compatibilityLevel":"FULL"}; null: removed
    {"keytype":"MODE","subject":"s","magic":0}   -> {"mode":"READONLY"}; null: removed
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0} -> {"subject":"s","version":3}
        (every version up to 3 soft-deleted)
    {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}  -> {"subject":"s"}
    {"keytype":"NOOP","magic":0}

The topic is compacted, so the latest value of each key is what survives;
replaying the records in offset order rebuilds the registry (state.py).
Sources: Confluent's ``storage/*Key.java`` and ``*Value.java``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "SCHEMA"
CONFIG = "CONFIG"
MODE = "MODE"
DELETE_SUBJECT = "DELETE_SUBJECT"
CLEAR_SUBJECT = "CLEAR_SUBJECT"
NOOP = "NOOP"
KEY_TYPES = frozenset({SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP})
AVRO = "AVRO"


class RecordFormatError(ValueError):
    """A ``_schemas`` record that is not in Confluent's layout."""


@dataclass(frozen=True)
class Reference:
    """A schema reference: ``name`` as the referring schema names it (an
    Avro full name, a JSON Schema URL, a .proto import path), resolved to
    ``subject`` at ``version``."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaRecord:
    """The value of a SCHEMA key: one version of a subject."""

    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str = AVRO
    references: tuple[Reference, ...] = ()
    deleted: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # metadata, ruleSet: kept as read

    def to_json(self) -> dict:
        value: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.schema_id}
        if self.schema_type != AVRO:
            value["schemaType"] = self.schema_type
        if self.references:
            value["references"] = [reference.to_json() for reference in self.references]
        value.update(self.extra)
        value["schema"] = self.schema
        value["deleted"] = self.deleted
        return value


def schema_key(subject: str, version: int) -> bytes:
    return _dumps({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1})


def subject_key(key_type: str, subject: str | None) -> bytes:
    """CONFIG, MODE, DELETE_SUBJECT or CLEAR_SUBJECT of ``subject``; CONFIG
    and MODE of the whole registry when ``subject`` is None."""
    if subject is None:
        return _dumps({"keytype": key_type, "magic": 0})
    return _dumps({"keytype": key_type, "subject": subject, "magic": 0})


def noop_key() -> bytes:
    return _dumps({"keytype": NOOP, "magic": 0})


def schema_value(record: SchemaRecord) -> bytes:
    return _dumps(record.to_json())


def config_value(subject: str | None, level: str) -> bytes:
    value: dict[str, Any] = {"compatibilityLevel": level}
    if subject is not None:
        value = {"subject": subject, **value}
    return _dumps(value)


def mode_value(subject: str | None, mode: str) -> bytes:
    value: dict[str, Any] = {"mode": mode}
    if subject is not None:
        value = {"subject": subject, **value}
    return _dumps(value)


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dumps({"subject": subject, "version": version})


def clear_subject_value(subject: str) -> bytes:
    return _dumps({"subject": subject})


def decode_key(data: bytes) -> dict:
    """The key as a dict with a known ``keytype``; RecordFormatError otherwise."""
    key = _loads(data)
    if not isinstance(key, dict) or key.get("keytype") not in KEY_TYPES:
        raise RecordFormatError(f"not a schema registry key: {bytes(data[:80])!r}")
    subject = key.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise RecordFormatError("the key's subject is not a string")
    if key["keytype"] == SCHEMA and not isinstance(key.get("version"), int):
        raise RecordFormatError("a SCHEMA key without an integer version")
    return key


def decode_schema_value(data: bytes) -> SchemaRecord:
    value = _loads(data)
    if not isinstance(value, dict):
        raise RecordFormatError("a SCHEMA value is not a JSON object")
    try:
        references = tuple(Reference(str(item["name"]), str(item["subject"]), int(item["version"]))
                           for item in value.get("references") or ())
        extra = {name: value[name] for name in ("metadata", "ruleSet") if value.get(name)}
        return SchemaRecord(str(value["subject"]), int(value["version"]), int(value["id"]),
                            str(value["schema"]), str(value.get("schemaType") or AVRO), references,
                            bool(value.get("deleted", False)), extra)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordFormatError(f"a SCHEMA value without a valid {exc}") from None


def decode_value(data: bytes) -> dict:
    value = _loads(data)
    if not isinstance(value, dict):
        raise RecordFormatError("a value is not a JSON object")
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(data: bytes) -> Any:
    try:
        return json.loads(bytes(data))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordFormatError(f"not JSON: {exc}") from None

"""Kafka's JSON message specs (kafka-python's copy, plus tests/unit/specs/)
and views of them comparable with kcore's schemas."""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from kcore.protocol.primitives import ZERO_UUID
from kcore.protocol.schema import Field, Struct, parse_versions

SPECS = resources.files("kafka.protocol.schemas.resources")


LOCAL_SPECS = Path(__file__).parents[1] / "unit" / "specs"


def spec_file(name: str):
    """The spec's JSON file: tests/unit/specs/ for those kafka-python lacks, else kafka-python's."""
    local = LOCAL_SPECS / f"{name}.json"
    return local if local.exists() else SPECS.joinpath(f"{name}.json")


def load_spec(name: str) -> dict:
    text = re.sub(r"(?m)^\s*//.*$", "", spec_file(name).read_text())
    spec = json.loads(text)
    common = {struct["name"]: struct["fields"] for struct in spec.get("commonStructs", [])}
    _attach_common(spec["fields"], common)
    return spec


def _attach_common(fields: list, common: dict) -> None:
    for field in fields:
        base = field["type"].removeprefix("[]")
        if "fields" not in field and base in common:
            field["fields"] = common[base]
        _attach_common(field.get("fields", []), common)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def within(spec: str | None, version: int) -> bool:
    span = parse_versions(spec)
    return span is not None and span[0] <= version <= span[1]


def expected_default(field: dict, served: range) -> object:
    kind = field["type"]
    default = field.get("default")
    if default == "null":
        return None
    if kind.startswith("[]"):
        return []
    if kind == "bool":
        return default == "true"
    if kind == "float64":
        return float(default or 0)
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(default, 0) if isinstance(default, str) else (default or 0)
    if kind == "string":
        # Unlike Kafka's "", a string nullable in the served versions defaults to None here.
        nullable = any(within(field.get("nullableVersions"), version) for version in served)
        return default if default is not None else (None if nullable else "")
    return None


def spec_view(fields: list, version: int, served: range) -> list[tuple]:
    view = []
    for field in fields:
        if not within(field["versions"], version):
            continue
        tag = field.get("tag") if within(field.get("taggedVersions"), version) else None
        nested = spec_view(field["fields"], version, served) if "fields" in field else None
        default = None if nested is not None and not field["type"].startswith("[]") \
            else expected_default(field, served)
        view.append((snake(field["name"]), field["type"], within(field.get("nullableVersions"), version),
                     tag, default, nested))
    return view


def schema_view(struct: Struct, version: int) -> list[tuple]:
    view = []
    for field in struct.fields:
        if not field.present(version):
            continue
        tag = field.tag if field.tagged(version) else None
        nested = schema_view(field.struct, version) if field.struct is not None else None
        default = None if field.kind == "struct" else _comparable_default(field)
        view.append((field.name, field.type, field.nullable(version), tag, default, nested))
    return view


def _comparable_default(field: Field) -> object:
    value = field.default_value()
    if field.kind == "uuid" and value == ZERO_UUID:
        return None  # Kafka's Uuid.ZERO_UUID, the specs' unstated default
    return None if field.kind in ("bytes", "records") and not value else value

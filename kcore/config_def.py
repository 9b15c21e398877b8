"""Kafka's config value types and validators (``ConfigDef``), for keys that
must parse, range-check and print exactly as a Kafka broker does.

A value arrives as text (a properties file, CreateTopics, AlterConfigs);
``ConfigType.parse`` turns it into the typed value (Kafka ``ConfigDef.parseType``:
INT must fit 32 bits, LONG 64, BOOLEAN is true/false in any case, LIST is
comma-separated and trimmed), a validator then checks its range, and
``ConfigType.render`` prints a typed value back as DescribeConfigs shows it
(``ConfigDef.convertToString``). ``ConfigType.id`` is the DescribeConfigs
v3+ config_type (``DescribeConfigsResponse.ConfigType``).

Pure functions and immutable values; imports nothing of kcore but the
protocol's integer bounds (so that a test launching a broker process can
read ``num.processes`` as the broker does without importing the broker).
"""
from __future__ import annotations

import enum
import os
from collections.abc import Callable
from typing import Any

from kcore.protocol.constants import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

Validator = Callable[[Any], None]  # raises ValueError with the reason


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid."""


class ConfigType(enum.Enum):
    """(DescribeConfigs config_type id, Kafka's type name)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7

    def parse(self, text: str) -> Any:
        value = text.strip()
        if self is ConfigType.BOOLEAN:
            if value.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return value.lower() == "true"
        if self is ConfigType.INT:
            return _integer(value, INT32_MIN, INT32_MAX, "a 32-bit integer")
        if self is ConfigType.LONG:
            return _integer(value, INT64_MIN, INT64_MAX, "a 64-bit integer")
        if self is ConfigType.DOUBLE:
            return float(value)
        if self is ConfigType.LIST:
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @staticmethod
    def render(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            return ",".join(str(item) for item in value)
        return str(value)


def _integer(text: str, low: int, high: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected {what}") from None
    if not low <= value <= high:
        raise ValueError(f"expected {what}")
    return value


def at_least(minimum: int) -> Validator:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"Value must be at least {minimum}")
    return check


def between(low: float, high: float) -> Validator:
    def check(value: Any) -> None:
        if not low <= value <= high:
            raise ValueError(f"Value must be no less than {low} and no more than {high}")
    return check


def one_of(*allowed: str) -> Validator:
    def check(value: Any) -> None:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item not in allowed:
                raise ValueError(f"String must be one of: {', '.join(allowed)}")
    return check


def any_of(*validators: Validator) -> Validator:
    """Valid when one of ``validators`` accepts; the first one's reason otherwise."""
    def check(value: Any) -> None:
        reasons = []
        for validator in validators:
            try:
                validator(value)
                return
            except ValueError as exc:
                reasons.append(str(exc))
        raise ValueError(" or ".join(reasons))
    return check


def only(accepted: Any, reason: str) -> Validator:
    """Refuse every value but ``accepted``, saying why (a setting kcore
    cannot honour)."""
    def check(value: Any) -> None:
        if value != accepted:
            raise ValueError(reason)
    return check


def process_count(num_processes: object) -> int:
    """The broker processes a ``num.processes`` value starts: "auto" is
    one per core this process may run on."""
    value = str(num_processes).strip()
    return len(os.sched_getaffinity(0)) if value == "auto" else int(value)

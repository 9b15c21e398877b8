"""What every console endpoint shares: the broker seen through
``ConsoleSource``, the error an endpoint raises, and argument parsing.

An endpoint is a plain function ``(broker, request) -> JSON-able`` (or a
coroutine of one); it raises ApiError for anything the caller got wrong,
which the router answers as ``{"error": NAME, "message": ...}`` with the
status. Bounds on sizes and counts live next to each endpoint.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kcore.console.history import ConsoleHistory
from kcore.coordinator.group.lag import ConsumerLag
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.schema_registry.registry import SchemaRegistry
from kcore.tables.service import TableService


class ApiError(Exception):
    """An answer other than 200: ``status`` (HTTP), ``error`` (a Kafka
    error name where one fits, else a short upper-case word)."""

    def __init__(self, status: int, error: str, message: str):
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


class ConsoleSource(BrokerFacade, Protocol):
    """The Broker as the console reads it: what handlers see, plus the
    sampled history of the counters, the consumer lag service and the start
    time, and the schema registry as this broker has replayed it."""

    @property
    def history(self) -> ConsoleHistory: ...
    @property
    def consumer_lag(self) -> ConsumerLag: ...
    @property
    def started_at(self) -> float: ...
    @property
    def schemas(self) -> SchemaRegistry: ...
    @property
    def tables(self) -> TableService: ...


@dataclass
class ApiRequest:
    """One console call: path parameters, query parameters, JSON body."""

    params: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def int_arg(values: dict[str, Any], name: str, default: int | None = None,
            low: int | None = None, high: int | None = None) -> int | None:
    """An integer argument (query string or body), checked against
    [low, high]; None when absent and no default."""
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):
        raise ApiError(400, "INVALID_REQUEST", f"{name} must be an integer, not {raw!r}")
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ApiError(400, "INVALID_REQUEST", f"{name} must be an integer, not {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ApiError(400, "INVALID_REQUEST", f"{name} must be between {low} and {high}, not {value}")
    return value


def required_int(values: dict[str, Any], name: str, low: int | None = None, high: int | None = None) -> int:
    value = int_arg(values, name, None, low, high)
    if value is None:
        raise ApiError(400, "INVALID_REQUEST", f"{name} is required")
    return value


def body_object(request: ApiRequest) -> dict[str, Any]:
    if not isinstance(request.body, dict):
        raise ApiError(400, "INVALID_REQUEST", "the body must be a JSON object")
    return request.body


def unknown_topic(topic: str) -> ApiError:
    return ApiError(404, "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic!r} does not exist")

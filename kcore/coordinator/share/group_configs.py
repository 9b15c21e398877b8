"""Share-group configs (Kafka's GroupConfig, resource type GROUP): per-group
overrides of the broker's ``group.share.*`` defaults, set with
IncrementalAlterConfigs and read with DescribeConfigs.

    share.auto.offset.reset        earliest | latest (default) | by_duration:<ISO-8601>
                                   where a share-partition without state starts
    share.isolation.level          read_uncommitted (default) | read_committed
    share.record.lock.duration.ms  the acquisition lock (>= 1000)
    share.delivery.count.limit     deliveries before a record is archived (2-10)
    share.session.timeout.ms       a silent member leaves after it
    share.heartbeat.interval.ms    how often members heartbeat

Kafka keeps group configs in the cluster metadata; kcore keeps them in the
memory of the broker that is told (a broker restarted forgets them), so
in a cluster they are set on every broker (``kcore share-groups``
does).

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SESSION_TIMEOUT_MS = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"

_DURATION = re.compile(r"^by_duration:P(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?|\d+D(T(\d+H)?(\d+M)?(\d+S)?)?)$")


def _reset(value: str) -> str:
    if value not in ("earliest", "latest") and not _DURATION.match(value):
        raise ValueError("must be earliest, latest or by_duration:<ISO-8601 duration>")
    return value


def _isolation(value: str) -> str:
    if value not in ("read_uncommitted", "read_committed"):
        raise ValueError("must be read_uncommitted or read_committed")
    return value


def _int_between(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        number = int(value)
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
        return str(number)
    return check


VALIDATORS: dict[str, Callable[[str], str]] = {
    AUTO_OFFSET_RESET: _reset,
    ISOLATION_LEVEL: _isolation,
    RECORD_LOCK_DURATION_MS: _int_between(1000, 3_600_000),
    DELIVERY_COUNT_LIMIT: _int_between(2, 10),
    SESSION_TIMEOUT_MS: _int_between(1, 2**31 - 1),
    HEARTBEAT_INTERVAL_MS: _int_between(1, 2**31 - 1),
}


@dataclass(frozen=True)
class ShareDefaults:
    """The broker's defaults (group.share.* configs)."""
    record_lock_duration_ms: int
    delivery_count_limit: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int
    max_record_locks: int
    max_share_sessions: int


class ShareGroupConfigs:
    def __init__(self, defaults: ShareDefaults) -> None:
        self.defaults = defaults
        self._overrides: dict[str, dict[str, str]] = {}

    def effective(self, group_id: str) -> dict[str, str]:
        """Every share config of a group: overrides over defaults."""
        values = {
            AUTO_OFFSET_RESET: "latest",
            ISOLATION_LEVEL: "read_uncommitted",
            RECORD_LOCK_DURATION_MS: str(self.defaults.record_lock_duration_ms),
            DELIVERY_COUNT_LIMIT: str(self.defaults.delivery_count_limit),
            SESSION_TIMEOUT_MS: str(self.defaults.session_timeout_ms),
            HEARTBEAT_INTERVAL_MS: str(self.defaults.heartbeat_interval_ms),
        }
        values.update(self._overrides.get(group_id, {}))
        return values

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._overrides.get(group_id, {}))

    def validate(self, changes: dict[str, str | None]) -> str | None:
        """The first problem with a set of changes, or None."""
        for name, value in changes.items():
            check = VALIDATORS.get(name)
            if check is None:
                return f"Unknown group config name: {name}"
            if value is not None:
                try:
                    check(value)
                except ValueError as exc:
                    return f"Invalid value {value} for configuration {name}: {exc}"
        return None

    def apply(self, group_id: str, changes: dict[str, str | None]) -> None:
        """Validated changes (None deletes an override)."""
        current = self._overrides.setdefault(group_id, {})
        for name, value in changes.items():
            if value is None:
                current.pop(name, None)
            else:
                current[name] = VALIDATORS[name](value)
        if not current:
            del self._overrides[group_id]

    def lock_duration_ms(self, group_id: str) -> int:
        return int(self.effective(group_id)[RECORD_LOCK_DURATION_MS])

    def delivery_count_limit(self, group_id: str) -> int:
        return int(self.effective(group_id)[DELIVERY_COUNT_LIMIT])

    def read_committed(self, group_id: str) -> bool:
        return self.effective(group_id)[ISOLATION_LEVEL] == "read_committed"

    def auto_offset_reset(self, group_id: str) -> str:
        return self.effective(group_id)[AUTO_OFFSET_RESET]

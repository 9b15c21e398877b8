"""Shared data, checks and broker set-ups for the real-client compat suites.

Every suite produces `Message`s built here, reads them back with its own
client, turns what it read into `Message`s again and compares with
`assert_same_partitions` (content and per-partition order) or
`assert_exactly_once` (no duplicates, no gaps, order kept).
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import BrokerProcess, free_port
from tests.support.fault_proxy import FaultProxy

PARTITIONS = 8
FULL_COUNT = 100_000
CODEC_COUNT = 200
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "all")
CODEC_ACKS = [pytest.param(codec, acks, id=f"{codec}-acks={acks}") for codec in CODECS for acks in ACKS]

# Read loops end on the high watermarks; 60 s bounds a stalled loop far
# above the ~5 s a healthy 100k read takes on this 2-core machine.
READ_TIMEOUT_S = 60.0
BROKER_ID = 0
# Kafka's defaults for log.segment.bytes and log.retention.hours (168).
DEFAULT_SEGMENT_BYTES = "1073741824"
DEFAULT_RETENTION_MS = str(7 * 24 * 3600 * 1000)

KCAT = "/usr/bin/kcat"
requires_kcat = pytest.mark.skipif(
    not os.path.exists(KCAT),
    reason="kcat is not installed at /usr/bin/kcat (Debian package `kcat`, which .ci/run installs)")


@dataclass(frozen=True)
class Message:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def now_ms() -> int:
    return int(time.time() * 1000)


def make_messages(count: int, tag: str, partitions: int = PARTITIONS,
                  base_timestamp: int | None = None) -> list[Message]:
    """Round-robin over partitions; timestamps rise by 1 ms per message.

    Every 1000th message (from index 7) has a null key and every 1000th
    (from index 3) an empty value; every 5th carries an empty-valued header,
    so the edge encodings are covered without dominating the data."""
    if base_timestamp is None:
        base_timestamp = now_ms() - 3_600_000
    messages = []
    for index in range(count):
        key = None if index % 1000 == 7 else f"key-{index}".encode()
        value = b"" if index % 1000 == 3 else f"{tag}-{index}:{'v' * (index % 61)}".encode()
        headers: tuple[tuple[str, bytes], ...] = (("index", str(index).encode()), ("source", b"compat"))
        if index % 5 == 0:
            headers += (("empty", b""),)
        messages.append(Message(index % partitions, key, value, headers, base_timestamp + index))
    return messages


def received(partition: int, key, value, headers, timestamp: int) -> Message:
    """A Message from what a client returned (headers: None, list or tuple)."""
    normalized = tuple((name, bytes(data) if data is not None else None) for name, data in headers or ())
    return Message(partition, None if key is None else bytes(key),
                   None if value is None else bytes(value), normalized, timestamp)


def by_partition(messages: Iterable[Message]) -> dict[int, list[Message]]:
    grouped: dict[int, list[Message]] = defaultdict(list)
    for message in messages:
        grouped[message.partition].append(message)
    return dict(grouped)


def assert_same_partitions(expected: list[Message], consumed: list[Message]) -> None:
    """Same messages, field for field, in the same order within each partition.

    Reports the first difference per partition instead of diffing 100k lists."""
    want, got = by_partition(expected), by_partition(consumed)
    problems = []
    for partition in sorted(set(want) | set(got)):
        wanted, gotten = want.get(partition, []), got.get(partition, [])
        first = next((i for i, (a, b) in enumerate(zip(wanted, gotten)) if a != b), None)
        if first is not None:
            problems.append(f"partition {partition} differs at position {first}:\n"
                            f"  expected {wanted[first]}\n  consumed {gotten[first]}")
        elif len(wanted) != len(gotten):
            problems.append(f"partition {partition}: expected {len(wanted)} messages, consumed {len(gotten)}")
    assert not problems, "\n".join(problems[:8])


def assert_exactly_once(expected: list[Message], consumed: list[Message]) -> None:
    """No duplicates, no gaps, and per-partition order kept, compared by value."""
    want = {p: [m.value for m in ms] for p, ms in by_partition(expected).items()}
    got = {p: [m.value for m in ms] for p, ms in by_partition(consumed).items()}
    problems = []
    for partition in sorted(set(want) | set(got)):
        wanted, gotten = want.get(partition, []), got.get(partition, [])
        if wanted == gotten:
            continue
        counts: dict[bytes, int] = defaultdict(int)
        for value in gotten:
            counts[value] += 1
        duplicates = sum(1 for c in counts.values() if c > 1)
        missing = sum(1 for v in wanted if v not in counts)
        problems.append(f"partition {partition}: expected {len(wanted)}, consumed {len(gotten)}, "
                        f"{duplicates} duplicated values, {missing} missing values, "
                        f"order kept: {_in_order(wanted, gotten)}")
    assert not problems, "\n".join(problems)


def _in_order(wanted: list[bytes], gotten: list[bytes]) -> bool:
    position = {value: index for index, value in enumerate(wanted)}
    indexes = [position[v] for v in gotten if v in position]
    return indexes == sorted(indexes)


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def first_offset_at_or_after(messages: list[Message], partition: int, timestamp: int) -> int | None:
    """The oracle for ListOffsets by timestamp over messages produced in order."""
    for offset, message in enumerate(m for m in messages if m.partition == partition):
        if message.timestamp >= timestamp:
            return offset
    return None


def timestamp_probes(messages: list[Message], partition: int) -> list[int]:
    """Timestamps to look up: before all, each exact one sampled, between two, after all."""
    stamps = [m.timestamp for m in messages if m.partition == partition]
    probes = [stamps[0] - 10_000, stamps[-1] + 10_000]
    for index in range(0, len(stamps), max(1, len(stamps) // 7)):
        probes += [stamps[index], stamps[index] + 1]
    return probes


def offsets_for_times_messages(tag: str, per_partition: int = 120, partitions: int = 4) -> list[Message]:
    """Messages whose timestamps rise by 10 ms and repeat in pairs per
    partition, so 'first offset at or after' must pick the first of a pair."""
    base = now_ms() - 600_000
    messages = []
    for index in range(per_partition):
        for partition in range(partitions):
            messages.append(Message(partition, f"k{index}".encode(), f"{tag}-{partition}-{index}".encode(),
                                    (), base + 10 * (index // 2)))
    return messages


def expected_leader(broker: BrokerProcess, partition: int) -> int:
    """Who leads a new topic's partition: the broker, or on a node of N
    processes (broker ids BROKER_ID..+N-1) process partition % N, as the
    placement puts replica 0 of partition i on process i mod N."""
    return BROKER_ID + partition % broker.processes


def start_broker(data_dir: Path, overrides: dict[str, str] | None = None, port: int | None = None) -> BrokerProcess:
    return BrokerProcess(data_dir, {"num.partitions": str(PARTITIONS), **(overrides or {})}, port=port).start()


@contextlib.contextmanager
def broker_behind_proxy(data_dir: Path, cut_every_bytes: int,
                        max_cuts: int) -> Iterator[tuple[BrokerProcess, FaultProxy]]:
    """A broker whose Metadata names only the proxy, so every connection of
    the client goes through the cuts."""
    broker_port = free_port()
    with FaultProxy(broker_port, cut_every_bytes=cut_every_bytes, max_cuts=max_cuts) as proxy:
        broker = start_broker(data_dir, {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"},
                              port=broker_port)
        try:
            yield broker, proxy
        except BaseException:
            print(f"proxy: {proxy.connections} connections, {proxy.torn_requests} torn requests, "
                  f"{proxy.lost_responses} lost responses\nbroker log:\n{broker.log()}")
            raise
        finally:
            broker.kill()


def idempotence_messages(count: int, tag: str, partitions: int = PARTITIONS) -> list[Message]:
    """Values carry their per-partition sequence so gaps and duplicates show."""
    base = now_ms()
    return [Message(index % partitions, f"k{index}".encode(),
                    f"{tag}-p{index % partitions}-s{index // partitions:07d}-{'x' * 80}".encode(),
                    (("seq", str(index).encode()),), base + index)
            for index in range(count)]

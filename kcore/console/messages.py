"""Messages: browse a partition from an offset or a timestamp, and a small
search on key or value over a bounded range.

Reads go through the log's read API (``Log.read``: whole batches from the
one holding the offset, below the high watermark) in chunks of
``READ_CHUNK_BYTES``, each pread at once, before any await, so the file
slices are valid when read. Nothing reads a whole partition: a browse
reads at most ``BROWSE_MAX_BYTES``, a search ``SEARCH_MAX_BYTES`` and
``SEARCH_MAX_RECORDS`` records within ``SEARCH_MAX_S``. Both let the event
loop run between batches, so Kafka requests wait for one batch's decoding,
never for a whole search: with back-to-back 16 MiB searches, ApiVersions
took p50 19 ms / p99 88 ms, against 91 / 264 ms when a search held the
loop throughout (0.2 / 2.2 ms idle).

Control batches (transaction markers) are skipped; records of aborted
transactions are shown, as a read_uncommitted consumer sees them. The
router turns the log's errors (an offset that retention removed meanwhile,
an unreadable segment) into answers.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Iterator

from kcore.console.base import ApiError, ApiRequest, ConsoleSource, int_arg, required_int, unknown_topic
from kcore.protocol.compression import max_decompressed_size
from kcore.protocol.records import Record, iter_batches
from kcore.replication.partition import Partition

# One read of the log: a fetch's default max.partition.fetch.bytes (1 MiB).
READ_CHUNK_BYTES = 1 << 20
BROWSE_MAX_RECORDS = 500
BROWSE_DEFAULT_RECORDS = 50
BROWSE_MAX_BYTES = 4 << 20
# A search scans at most this much: 16 MiB of 1 KiB records (~16k) took
# 100-240 ms here, in slices of one batch (~1000 records decode in ~7 ms);
# the time bound covers slower records.
SEARCH_MAX_RECORDS = 100_000
SEARCH_DEFAULT_RECORDS = 10_000
SEARCH_MAX_BYTES = 16 << 20
SEARCH_MAX_S = 2.0
SEARCH_MAX_MATCHES = 100
# The records of one answer stop once their shown text passes this: a
# compressed batch can hold far more than it weighs on disk, and hex
# triples binary (500 records of 64 KiB previews would be ~300 MB).
ANSWER_MAX_CHARS = 8 << 20
# Decoding runs at most this long before the event loop gets a turn.
SLICE_S = 0.005
# A key, value or header shown in the page: the first 64 KiB of it.
PREVIEW_BYTES = 64 << 10
# Text with these is shown as hex: C0 controls other than tab, LF, CR.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def local_partition(broker: ConsoleSource, topic: str, index: int) -> Partition:
    if broker.controller.topic(topic) is None:
        raise unknown_topic(topic)
    partition = broker.replica_manager.get(topic, index)
    if partition is not None:
        return partition
    state = broker.replica_manager.metadata_cache.partition(topic, index)
    if state is None:
        raise ApiError(404, "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic!r} has no partition {index}")
    leader = broker.replica_manager.metadata_cache.broker(state.leader)
    where = f"broker {leader.broker_id} at {leader.host}:{leader.port}" if leader else "no live broker"
    raise ApiError(409, "NOT_LEADER_OR_FOLLOWER",
                   f"{topic}-{index} has no replica on this broker; its leader is {where}")


def read_batches(partition: Partition, offset: int, max_bytes: int) -> Iterator[Iterator[Record]]:
    """The records from ``offset`` up to the high watermark, one iterator
    per batch, reading the log READ_CHUNK_BYTES at a time (a whole batch at
    least) and at most ``max_bytes`` in all. Each read is a fresh
    ``Log.read`` whose slices are pread at once, so a caller may await
    between batches. A batch's records are decoded as the caller takes
    them, from its section decompressed to at most 64 times the topic's
    max.message.bytes (protocol/compression.py): a few KiB on disk may hold
    millions of records, of which a page shows a few."""
    max_size = max_decompressed_size(partition.configs["max.message.bytes"])
    position, budget = offset, max_bytes
    while budget > 0:
        high_watermark = partition.high_watermark
        if position >= high_watermark:
            return
        slices = partition.log.read(position, min(READ_CHUNK_BYTES, budget), high_watermark)
        chunk = b"".join(os.pread(s.fd, s.size, s.position) for s in slices)
        if not chunk:
            return
        budget -= len(chunk)
        for batch in iter_batches(chunk):
            start, position = position, max(position, batch.next_offset)
            if not batch.is_control:
                yield (r for r in batch.stream(max_size)
                       if r.offset is not None and start <= r.offset < high_watermark)


class Slicer:
    """Lets the event loop run once ``SLICE_S`` of decoding has passed:
    Kafka requests then wait for one batch's decoding at most, never for a
    whole browse or search."""

    def __init__(self) -> None:
        self.since = time.monotonic()

    async def pause(self) -> None:
        if time.monotonic() - self.since >= SLICE_S:
            await asyncio.sleep(0)
            self.since = time.monotonic()


def start_offset(partition: Partition, query: dict[str, str]) -> int:
    """``offset`` (default: the log start offset), or the first offset whose
    timestamp is at or after ``timestamp`` (ms; the high watermark when
    none is)."""
    log = partition.log
    timestamp = int_arg(query, "timestamp", None, 0)
    if timestamp is not None:
        found = log.offset_for_timestamp(timestamp)
        return partition.high_watermark if found is None else found[0]
    offset = int_arg(query, "offset", log.log_start_offset)
    assert offset is not None
    if not log.log_start_offset <= offset <= partition.high_watermark:
        raise ApiError(400, "OFFSET_OUT_OF_RANGE",
                       f"offset {offset} is outside [{log.log_start_offset}, {partition.high_watermark}] "
                       f"(log start offset, high watermark) of {partition.topic}-{partition.index}")
    return offset


def _partition(broker: ConsoleSource, request: ApiRequest) -> Partition:
    index = required_int(request.params, "partition", 0)
    return local_partition(broker, request.params["topic"], index)


def _bounds(partition: Partition) -> dict:
    return {"log_start_offset": partition.log.log_start_offset,
            "high_watermark": partition.high_watermark}


async def browse(broker: ConsoleSource, request: ApiRequest) -> dict:
    partition = _partition(broker, request)
    limit = int_arg(request.query, "limit", BROWSE_DEFAULT_RECORDS, 1, BROWSE_MAX_RECORDS)
    assert limit is not None
    offset = start_offset(partition, request.query)
    records: list[dict] = []
    next_offset = offset
    slicer = Slicer()
    shown = 0
    for batch in read_batches(partition, offset, BROWSE_MAX_BYTES):
        for record in itertools.islice(batch, limit - len(records)):
            records.append(describe_record(record))
            shown += shown_chars(records[-1])
            next_offset = record.offset + 1  # type: ignore[operator]
            if shown > ANSWER_MAX_CHARS:
                break
        if len(records) == limit or shown > ANSWER_MAX_CHARS:
            break
        await slicer.pause()
    return {"topic": partition.topic, "partition": partition.index, "start_offset": offset,
            "next_offset": next_offset, "records": records, **_bounds(partition)}


async def search(broker: ConsoleSource, request: ApiRequest) -> dict:
    """Records whose key or value (``in``: key, value or both) contains
    ``q`` (text, case-insensitive), scanning ``max_records`` from
    ``offset`` (default: that many before the high watermark)."""
    partition = _partition(broker, request)
    query = request.query
    needle = (query.get("q") or "").lower()
    if not needle:
        raise ApiError(400, "INVALID_REQUEST", "q (the text to look for) is required")
    where = query.get("in") or "both"
    if where not in ("key", "value", "both"):
        raise ApiError(400, "INVALID_REQUEST", f"in must be key, value or both, not {where!r}")
    scan = int_arg(query, "max_records", SEARCH_DEFAULT_RECORDS, 1, SEARCH_MAX_RECORDS)
    assert scan is not None
    if "offset" not in query and "timestamp" not in query:
        query = {**query, "offset": str(max(partition.high_watermark - scan, partition.log.log_start_offset))}
    offset = start_offset(partition, query)
    deadline = time.monotonic() + SEARCH_MAX_S
    matches: list[dict] = []
    scanned, next_offset, stopped, shown = 0, offset, False, 0
    slicer, matcher = Slicer(), _matcher(needle, where)
    for batch in read_batches(partition, offset, SEARCH_MAX_BYTES):
        for record in batch:
            scanned += 1
            next_offset = record.offset + 1  # type: ignore[operator]
            if matcher(record):
                matches.append(describe_record(record))
                shown += shown_chars(matches[-1])
            if len(matches) >= SEARCH_MAX_MATCHES or scanned >= scan or shown > ANSWER_MAX_CHARS:
                stopped = True
                break
        if stopped or time.monotonic() > deadline:
            break
        await slicer.pause()
    complete = next_offset >= partition.high_watermark
    return {"topic": partition.topic, "partition": partition.index, "q": query.get("q"),
            "start_offset": offset, "next_offset": next_offset, "scanned": scanned,
            "complete": complete, "records": matches, **_bounds(partition)}


def _matcher(needle: str, where: str) -> Callable[[Record], bool]:
    """Case-insensitive containment in the key, the value or either. An
    ASCII needle is looked for in the lowered bytes (C speed, ~1 GB/s);
    another is looked for in the text."""
    def fields(record: Record) -> tuple[bytes | None, ...]:
        return (record.key,) if where == "key" else (record.value,) if where == "value" else \
            (record.key, record.value)

    if needle.isascii():
        raw = needle.encode()
        return lambda record: any(data is not None and raw in bytes(data).lower() for data in fields(record))
    return lambda record: any(data is not None and needle in bytes(data).decode("utf-8", "replace").lower()
                              for data in fields(record))


# -- rendering --------------------------------------------------------------------------
def render(data: bytes | None) -> dict:
    """How the page shows some bytes: ``json`` (pretty-printed), ``text``
    (UTF-8 without control characters) or ``binary`` (hex), cut to
    PREVIEW_BYTES."""
    if data is None:
        return {"type": "null", "size": 0, "text": None, "truncated": False}
    data = bytes(data)
    shown, truncated = data[:PREVIEW_BYTES], len(data) > PREVIEW_BYTES
    text: str | None
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        text = None if not truncated else _cut_text(shown)
    if text is None or _CONTROL.search(text):
        return {"type": "binary", "size": len(data), "text": shown.hex(" "), "truncated": truncated}
    if not truncated and text[:1] in ("{", "["):
        try:
            return {"type": "json", "size": len(data), "text": json.dumps(json.loads(text), indent=2,
                                                                          ensure_ascii=False),
                    "truncated": False}
        except ValueError:
            pass
    return {"type": "text", "size": len(data), "text": text, "truncated": truncated}


def _cut_text(shown: bytes) -> str | None:
    """UTF-8 cut inside a character at the preview's end: drop that tail."""
    for cut in range(1, 4):
        try:
            return shown[:-cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def describe_record(record: Record) -> dict:
    return {"offset": record.offset, "timestamp": record.timestamp,
            "key": render(record.key), "value": render(record.value),
            "headers": [{"key": key, "value": render(value)} for key, value in record.headers]}


def shown_chars(entry: dict) -> int:
    """The text one described record puts in an answer, roughly."""
    parts = [entry["key"], entry["value"], *(h["value"] for h in entry["headers"])]
    return sum(len(part["text"] or "") for part in parts) + 100 * len(parts)

"""Messages: browse a partition from an offset or a timestamp, and a small
search on key or value over a bounded range.

Reads go through the log's read API (``Log.read``: whole batches from the
one holding the offset, below the high watermark) in chunks of
``READ_CHUNK_BYTES``, each pread at once, before any await, so the file
slices are valid when read. Nothing reads a whole partition: a browse
reads at most ``BROWSE_MAX_BYTES``, a search ``SEARCH_MAX_BYTES`` and
``SEARCH_MAX_RECORDS`` records within ``SEARCH_MAX_S``. The router turns
the log's errors (an offset that retention removed meanwhile, an
unreadable segment) into answers. Control batches
(transaction markers) are skipped; records of aborted transactions are
shown, as a read_uncommitted consumer sees them.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

from kcore.console.base import ApiError, ApiRequest, ConsoleSource, int_arg, required_int, unknown_topic
from kcore.protocol.records import Record, iter_batches
from kcore.replication.partition import Partition

# One read of the log: a fetch's default max.partition.fetch.bytes (1 MiB).
READ_CHUNK_BYTES = 1 << 20
BROWSE_MAX_RECORDS = 500
BROWSE_DEFAULT_RECORDS = 50
BROWSE_MAX_BYTES = 4 << 20
# A search scans at most this much: ~10k records of 1 KiB, ~50 ms of
# decoding on the event loop per 16 MiB chunk set, bounded again by time.
SEARCH_MAX_RECORDS = 100_000
SEARCH_DEFAULT_RECORDS = 10_000
SEARCH_MAX_BYTES = 16 << 20
SEARCH_MAX_S = 2.0
SEARCH_MAX_MATCHES = 100
# A key, value or header shown in the page: the first 64 KiB of it.
PREVIEW_BYTES = 64 << 10


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


def read_records(partition: Partition, offset: int, max_bytes: int) -> Iterator[Record]:
    """Records from ``offset`` up to the high watermark, reading at most
    ``max_bytes`` of batches (at least one batch)."""
    log, high_watermark = partition.log, partition.high_watermark
    position, budget = offset, max_bytes
    while position < high_watermark and budget > 0:
        chunk = b"".join(os.pread(s.fd, s.size, s.position)
                         for s in log.read(position, min(READ_CHUNK_BYTES, budget), high_watermark))
        if not chunk:
            return
        budget -= len(chunk)
        for batch in iter_batches(chunk):
            if batch.is_control:
                position = max(position, batch.next_offset)
                continue
            for record in batch.records():
                assert record.offset is not None
                if position <= record.offset < high_watermark:
                    yield record
            position = max(position, batch.next_offset)


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


def browse(broker: ConsoleSource, request: ApiRequest) -> dict:
    partition = _partition(broker, request)
    limit = int_arg(request.query, "limit", BROWSE_DEFAULT_RECORDS, 1, BROWSE_MAX_RECORDS)
    offset = start_offset(partition, request.query)
    records: list[dict] = []
    next_offset = offset
    for record in read_records(partition, offset, BROWSE_MAX_BYTES):
        records.append(describe_record(record))
        assert record.offset is not None
        next_offset = record.offset + 1
        if len(records) == limit:
            break
    return {"topic": partition.topic, "partition": partition.index, "start_offset": offset,
            "next_offset": next_offset, "records": records, **_bounds(partition)}


def search(broker: ConsoleSource, request: ApiRequest) -> dict:
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
    scanned, next_offset, complete = 0, offset, True
    for record in read_records(partition, offset, SEARCH_MAX_BYTES):
        assert record.offset is not None
        scanned += 1
        next_offset = record.offset + 1
        if _contains(record, needle, where):
            matches.append(describe_record(record))
        if len(matches) >= SEARCH_MAX_MATCHES or scanned >= scan or time.monotonic() > deadline:
            complete = next_offset >= partition.high_watermark
            break
    else:
        complete = True
    return {"topic": partition.topic, "partition": partition.index, "q": query.get("q"),
            "start_offset": offset, "next_offset": next_offset, "scanned": scanned,
            "complete": complete, "records": matches, **_bounds(partition)}


def _contains(record: Record, needle: str, where: str) -> bool:
    fields = (record.key,) if where == "key" else (record.value,) if where == "value" else (record.key, record.value)
    return any(data is not None and needle in bytes(data).decode("utf-8", "replace").lower() for data in fields)


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
    if text is None or any(c < " " and c not in "\t\n\r" for c in text):
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

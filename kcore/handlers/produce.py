"""Produce (key 0): append each partition's record batch to its log.

acks=0 gets no response (and a failed append closes the connection, the
only signal such a client can see); acks=1 answers after the leader's
append; acks=-1 (all) after the ISR has it, which on one node is the same
moment, gated by min.insync.replicas. With flush.messages=1 both wait, in
addition, for the group-commit fsync covering the batch (all partitions of
the request at once); a failed fsync answers KAFKA_STORAGE_ERROR. Versions
0-2 carry message format v0/v1, which kcore does not store: they get
UNSUPPORTED_VERSION.
"""
from __future__ import annotations

import asyncio
import logging

from kcore.handlers.base import CloseConnection
from kcore.log.errors import LogError
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import PartitionError

log = logging.getLogger(__name__)
FIRST_V2_VERSION = 3


async def handle(broker, context, request):
    body = request.body
    acks = body.acks
    responses = []
    failed = False
    durable: list[tuple[dict, asyncio.Future]] = []
    for topic in body.topic_data:
        results = []
        for data in topic.partition_data:
            code, message, result = _append(broker, request.api_version, acks, topic.name, data)
            failed |= code != ErrorCode.NONE
            results.append({
                "index": data.index,
                "error_code": code,
                "base_offset": result.base_offset if result else -1,
                "log_append_time_ms": result.log_append_time if result else -1,
                "log_start_offset": result.log_start_offset if result else -1,
                "record_errors": [],
                "error_message": message,
            })
            if result is not None and result.durable is not None:
                durable.append((results[-1], result.durable))
        responses.append({"name": topic.name, "partition_responses": results})
    if acks == 0:
        for _, future in durable:
            future.add_done_callback(_observe)
        if failed:
            raise CloseConnection("produce with acks=0 failed")
        return None
    if durable:
        await _wait_durable(durable)
    return {"responses": responses, "throttle_time_ms": 0}


async def _wait_durable(durable: list[tuple[dict, asyncio.Future]]) -> None:
    """Wait for every partition's group-commit fsync (one after the other:
    cheaper than asyncio.wait, and they complete together anyway); a
    partition whose fsync failed answers KAFKA_STORAGE_ERROR. If this
    request is cancelled (its connection closed) only these per-request
    futures are cancelled; the syncs and the high watermark go on."""
    for entry, future in durable:
        try:
            await future
        except LogError as exc:
            entry["error_code"] = exc.error_code
            entry["error_message"] = str(exc) or "fsync failed"
            entry["base_offset"] = -1
            entry["log_append_time_ms"] = -1
            log.error("produce: %s", entry["error_message"])


def _observe(future: asyncio.Future) -> None:
    """acks=0: nobody waits for the fsync; mark its outcome as seen (the
    partition has already handled a failure)."""
    if not future.cancelled():
        future.exception()


def _append(broker, version: int, acks: int, topic: str, data):
    if version < FIRST_V2_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION, "produce v0-v2 (message format v0/v1) is not supported", None
    if acks not in (0, 1, -1):
        return ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, got {acks}", None
    partition = broker.replica_manager.get(topic, data.index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, None
    if data.records is None or len(data.records) == 0:
        return ErrorCode.INVALID_RECORD, "no record batch", None
    try:
        result = partition.append_records_to_leader(data.records, acks, broker.log_syncer)
    except PartitionError as exc:
        if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
            log.error("%s-%d: %s", topic, data.index, exc.message)
        return exc.error_code, exc.message or None, None
    return ErrorCode.NONE, None, result

"""Produce (key 0): append each partition's record batch to its log.

acks=0 gets no response (and a failed append closes the connection, the
only signal such a client can see); acks=1 answers after the leader's
append; acks=-1 (all) after the ISR has it, which on one node is the same
moment, gated by min.insync.replicas. Versions 0-2 carry message format
v0/v1, which kcore does not store: they get UNSUPPORTED_VERSION.
"""
from __future__ import annotations

import logging

from kcore.handlers.base import CloseConnection
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import PartitionError

log = logging.getLogger(__name__)
FIRST_V2_VERSION = 3


async def handle(broker, context, request):
    body = request.body
    acks = body.acks
    responses = []
    failed = False
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
        responses.append({"name": topic.name, "partition_responses": results})
    if acks == 0:
        if failed:
            raise CloseConnection("produce with acks=0 failed")
        return None
    return {"responses": responses, "throttle_time_ms": 0}


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
        result = partition.append_records_to_leader(data.records, acks)
    except PartitionError as exc:
        if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
            log.error("%s-%d: %s", topic, data.index, exc.message)
        return exc.error_code, exc.message or None, None
    return ErrorCode.NONE, None, result

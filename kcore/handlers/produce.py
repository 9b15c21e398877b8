"""Produce (key 0): append each partition's record batch to its log.

acks=0 gets no response (and a failed append closes the connection, the
only signal such a client can see); acks=1 answers after the leader's
append; acks=-1 (all) once the high watermark passes the batch, i.e. every
in-sync replica has it, or timeout_ms later with REQUEST_TIMED_OUT (the
produce purgatory). Before the append acks=all needs min.insync.replicas
in the ISR (NOT_ENOUGH_REPLICAS); if the ISR shrank below it while waiting
the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND, and NOT_LEADER_OR_FOLLOWER
if the leadership moved. With flush.messages=1 both acks wait, in addition,
for the group-commit fsync covering the batch (all partitions of the
request at once); a failed fsync answers KAFKA_STORAGE_ERROR. Versions
0-2 carry message format v0/v1, which kcore does not store: they get
UNSUPPORTED_VERSION (README.md, "Old message formats").

A batch refused because of some of its records (a keyless record on a
compacted topic, a timestamp out of the topic's bounds) names them in
``record_errors`` (v8+, KIP-467; log/log_validator.py) and the whole batch
is not appended, as in Kafka. ``error_message`` (v8+) explains every
partition error kcore has words for; Kafka fills it for the record errors
only, and clients show it where they show the error code.

Transactional batches are verified with their transaction coordinator
before anything of the request is appended (KIP-890 part 1,
handlers/produce_verification.py).

v10+ (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER carries its
current leader and epoch, and the answer the endpoints of those leaders
(leader_hints.py), so the client sends the batch on to the new leader at
once. v11-12 answer as v10: a failed transaction verification is
INVALID_TXN_STATE at every version (Kafka answers TRANSACTION_ABORTABLE
from v11), and v12's implicit AddPartitionsToTxn needs transaction version
2, which kcore's ApiVersions does not finalize. v13 (KIP-516) names topics
by id: an id this broker's metadata does not know gets UNKNOWN_TOPIC_ID.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from kcore.handlers.authz import topic_allowed, txn_allowed
from kcore.handlers.base import BrokerFacade, CloseConnection
from kcore.handlers.leader_hints import LeaderHints
from kcore.handlers.produce_verification import Verification, verify_produce
from kcore.log.errors import LogError
from kcore.protocol.errors import ErrorCode
from kcore.protocol.messages.produce import (
    NodeEndpointDict,
    PartitionProduceResponseDict,
    ProduceResponseDict,
    TopicProduceResponseDict,
)
from kcore.replication.partition import LogAppendResult, Partition, PartitionError
from kcore.security.acl import AclOperation
from kcore.security.quotas import PRODUCER_BYTE_RATE, user_of

log = logging.getLogger(__name__)
FIRST_V2_VERSION = 3
FIRST_WITH_LEADER_HINTS = 10
FIRST_BY_TOPIC_ID = 13


class _Appended:
    """What a request's appends left to wait for: group-commit fsyncs,
    acks=all replication (entry, Partition, offset), and whether any failed."""

    def __init__(self) -> None:
        self.durable: list[tuple[PartitionProduceResponseDict, asyncio.Future]] = []
        self.replicated: list[tuple[PartitionProduceResponseDict, Any, int]] = []
        self.failed = False


async def handle(broker: BrokerFacade, context, request) -> ProduceResponseDict | None:
    body = request.body
    version = request.api_version
    denied = None if broker.authorizer is None else _denial(broker, context, body)
    cache = broker.replica_manager.metadata_cache
    appended = _Appended()
    named = [(topic.name if version < FIRST_BY_TOPIC_ID else cache.topic_name(topic.topic_id), topic)
             for topic in body.topic_data]
    verification = await verify_produce(
        broker, body, [(name, topic.partition_data) for name, topic in named if name is not None],
        lambda topic: denied is None or denied(topic) is None)
    responses: list[TopicProduceResponseDict] = []
    answered: list[tuple[str | None, list[PartitionProduceResponseDict]]] = []
    for name, topic in named:
        refused = _UNKNOWN_TOPIC_ID if name is None else denied(name) if denied is not None else None
        results = [_partition_result(broker, version, body.acks, name, data, refused, verification, appended)
                   for data in topic.partition_data]
        answered.append((name, results))
        responses.append({"name": topic.name, "topic_id": topic.topic_id, "partition_responses": results})
    throttle_ms = _throttle(broker, context, request) if broker.quotas.active else 0
    if body.acks == 0:
        for _, future in appended.durable:
            future.add_done_callback(_observe)
        if appended.failed:
            raise CloseConnection("produce with acks=0 failed")
        return None
    if appended.durable:
        await _wait_durable(appended.durable)
    if appended.replicated:
        with broker.stats.delayed_produce:  # Kafka's produce purgatory
            await _wait_replicated(appended.replicated, body.timeout_ms / 1000)
    answer: ProduceResponseDict = {"responses": responses, "throttle_time_ms": throttle_ms}
    if version >= FIRST_WITH_LEADER_HINTS:
        answer["node_endpoints"] = _leader_hints(broker, context, answered)
    return answer


def _partition_result(broker: BrokerFacade, version: int, acks: int, topic: str | None, data,
                      refused: AppendOutcome | None, verification: Verification,
                      appended: _Appended) -> PartitionProduceResponseDict:
    """Append one partition's batch (unless its topic was refused or its
    transaction verification failed) and note what its answer waits for."""
    if refused is None and topic is not None:
        outcome = _unverified(verification, topic, data.index) or _append(
            broker, version, acks, topic, data, verification.guard((topic, data.index)))
    else:
        outcome = refused or _UNKNOWN_TOPIC_ID
    result = outcome.result
    appended.failed |= outcome.error_code != ErrorCode.NONE
    entry: PartitionProduceResponseDict = {
        "index": data.index,
        "error_code": outcome.error_code,
        "base_offset": result.base_offset if result else -1,
        "log_append_time_ms": result.log_append_time if result else -1,
        "log_start_offset": result.log_start_offset if result else -1,
        "record_errors": [{"batch_index": index, "batch_index_error_message": message}
                          for index, message in outcome.record_errors],
        "error_message": outcome.error_message,
    }
    if result is not None and result.durable is not None:
        appended.durable.append((entry, result.durable))
    if result is not None and acks == -1:
        appended.replicated.append((entry, outcome.partition, result.required_offset))
    return entry


def _leader_hints(broker: BrokerFacade, context,
                  named: list[tuple[str | None, list[PartitionProduceResponseDict]]]) -> list[NodeEndpointDict]:
    """KIP-951: each NOT_LEADER_OR_FOLLOWER partition's current leader; the
    endpoints of the leaders named."""
    hints = LeaderHints(broker, context.listener)
    for topic, results in named:
        for entry in results:
            if topic is not None and entry["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                leader = hints.current_leader(topic, entry["index"])
                if leader is not None:
                    entry["current_leader"] = leader
    return hints.node_endpoints()


def _denial(broker: BrokerFacade, context, body):
    """With an authorizer: the refusal of a topic's partitions, or None.
    A transactional produce needs WRITE on its transactional id (every
    partition refused otherwise), then each topic WRITE (Kafka's KafkaApis)."""
    if body.transactional_id and not txn_allowed(broker, context, AclOperation.WRITE,
                                                 body.transactional_id):
        refused = AppendOutcome(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return lambda topic: refused
    topic_refused = AppendOutcome(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return lambda topic: (None if topic_allowed(broker, context, AclOperation.WRITE, topic)
                          else topic_refused)


def _throttle(broker: BrokerFacade, context, request) -> int:
    """producer_byte_rate: record the request's record bytes; a client
    over its quota gets the time back in throttle_time_ms and its
    connection is muted that long after the response (KIP-219)."""
    size = sum(len(data.records) for topic in request.body.topic_data
               for data in topic.partition_data if data.records is not None)
    throttle_ms = broker.quotas.record(PRODUCER_BYTE_RATE, user_of(context.principal),
                                       request.header.client_id or "", size)
    if throttle_ms > context.mute_ms:
        context.mute_ms = throttle_ms
    return throttle_ms


async def _wait_durable(durable: list[tuple[PartitionProduceResponseDict, asyncio.Future]]) -> None:
    """Wait for every partition's group-commit fsync (one after the other:
    cheaper than asyncio.wait, and they complete together anyway); a
    partition whose fsync failed answers KAFKA_STORAGE_ERROR. If this
    request is cancelled (its connection closed) only these per-request
    futures are cancelled; the syncs and the high watermark go on."""
    for entry, future in durable:
        try:
            await future
        except LogError as exc:
            _fail(entry, exc.error_code, str(exc) or "fsync failed")
            log.error("produce: %s", entry["error_message"])


async def _wait_replicated(replicated: list[tuple[PartitionProduceResponseDict, Any, int]],
                           timeout_s: float) -> None:
    """acks=all: wait until each partition's high watermark passes its
    batch, all partitions sharing the request's timeout_ms."""
    waits = []
    for entry, partition, required_offset in replicated:
        if entry["error_code"] != ErrorCode.NONE:
            continue
        future = partition.wait_for_replicas(required_offset)
        if future is None:
            code = partition.acks_all_error()
            if code != ErrorCode.NONE:
                _fail(entry, code, None)
            continue
        waits.append((entry, future))
    if not waits:
        return
    done, _ = await asyncio.wait([f for _, f in waits], timeout=max(timeout_s, 0))
    for entry, future in waits:
        if future in done:
            code = future.result()
            if code != ErrorCode.NONE:
                _fail(entry, code, None)
        else:
            future.cancel()
            _fail(entry, ErrorCode.REQUEST_TIMED_OUT,
                  "the in-sync replicas did not all copy the batch within timeout_ms")


def _fail(entry: PartitionProduceResponseDict, code: int, message: str | None) -> None:
    entry["error_code"] = code
    entry["error_message"] = message
    entry["base_offset"] = -1
    entry["log_append_time_ms"] = -1


def _observe(future: asyncio.Future) -> None:
    """acks=0: nobody waits for the fsync; mark its outcome as seen (the
    partition has already handled a failure)."""
    if not future.cancelled():
        future.exception()


class AppendOutcome(NamedTuple):
    """One partition's produce: its error (NONE, with ``result``), Kafka's
    error_message, and the records that made the batch fail (KIP-467)."""

    error_code: int
    error_message: str | None = None
    result: LogAppendResult | None = None
    partition: Partition | None = None
    record_errors: Sequence[tuple[int, str]] = ()


_UNKNOWN_TOPIC_ID = AppendOutcome(ErrorCode.UNKNOWN_TOPIC_ID, "no topic has this id")


def _unverified(verification: Verification, topic: str, index: int) -> AppendOutcome | None:
    refused = verification.refused.get((topic, index))
    return None if refused is None else AppendOutcome(*refused)


def _append(broker, version: int, acks: int, topic: str, data,
            verification_guard: int | None) -> AppendOutcome:
    if version < FIRST_V2_VERSION:
        return AppendOutcome(ErrorCode.UNSUPPORTED_VERSION,
                             "produce v0-v2 (message format v0/v1) is not supported")
    if acks not in (0, 1, -1):
        return AppendOutcome(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, got {acks}")
    partition = broker.replica_manager.get(topic, data.index)
    if partition is None:
        return AppendOutcome(broker.replica_manager.partition_error(topic, data.index))
    if data.records is None or len(data.records) == 0:
        return AppendOutcome(ErrorCode.INVALID_RECORD, "no record batch")
    try:
        result = partition.append_records_to_leader(data.records, acks, broker.log_syncer,
                                                    verification_guard)
    except PartitionError as exc:
        if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
            log.error("%s-%d: %s", topic, data.index, exc.message)
        return AppendOutcome(exc.error_code, exc.message or None, record_errors=exc.record_errors)
    if not result.duplicate:
        broker.stats.topics.record_produce(topic, len(data.records),
                                           result.required_offset - result.base_offset)
    return AppendOutcome(ErrorCode.NONE, result=result, partition=partition)

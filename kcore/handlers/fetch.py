"""Fetch (key 1): file slices of whole batches, long-polled, with sessions.

Each partition contributes whole batches from its fetch offset, capped by
partition_max_bytes and what is left of max_bytes; the first partition with
data always returns at least one batch even if larger (KIP-74). When fewer
than min_bytes are ready the request waits, woken by new data, until
max_wait_ms.

Fetch sessions (KIP-227, v7+; replication/fetch_session.py): a full fetch
with epoch 0 opens one and gets its id; incremental fetches then name only
the partitions whose fetch offset changed (and those to forget), and are
answered with only the partitions that have something new. kafka-python
and kcore's own follower fetcher use them; librdkafka and aiokafka send
full fetches without a session (session id 0, epoch -1), answered as
before.

Consumers (replica_id -1) read up to the high watermark (last stable
offset under read_committed, with the aborted transactions the returned
data overlaps) and are woken when it moves. From v11 a consumer may read
from a follower, up to the follower's high watermark, as Kafka serves it
(the request carries client metadata: its rack). With a replica selector
(replica.selector.class, KIP-392, replication/replica_selector.py) the
leader answers such a consumer with a ``preferred_read_replica`` and no
data when the selector picks a follower; the answer goes at once.
Followers (replica_id = their broker id) read up to the log end offset, are
woken by appends, and each fetch reports their progress to the leader
(the fetch offset is their log end offset), which moves the ISR and the
high watermark; the log start offset each reports moves the low watermark
a DeleteRecords waits on. A fetch from a broker that is not a replica of the
partition, or a follower's or pre-v11 consumer's fetch sent to a broker
that is not its leader, gets NOT_LEADER_OR_FOLLOWER and reads nothing.

Fetch v12 carries the fetcher's ``last_fetched_epoch`` (Kafka's
Partition.readRecords): when the replica's log ends that epoch before the
fetch offset, or never had it, the answer is no data and a
``diverging_epoch`` (the largest epoch it has up to that one, and that
epoch's end offset), which the fetcher truncates to (KIP-320 without an
OffsetForLeaderEpoch round trip); it goes at once and a follower's
progress is not recorded. A last fetched epoch whose end the replica
cannot tell (older than its whole epoch cache, or above it), or a fetch
offset below the log start, answers OFFSET_OUT_OF_RANGE.

With an authorizer, a consumer needs READ on each topic (its partitions
get TOPIC_AUTHORIZATION_FAILED otherwise) and a follower CLUSTER_ACTION on
the cluster (every partition refused otherwise). A consumer over its
consumer_byte_rate is throttled (security/quotas.py): a fetch outside a
session whose data would pass the quota is answered without it, as
Kafka's; in a session (whose state follows every answer) the data goes
and the throttle time follows it.

Replication throttle (replication/replication_quota.py): while the
leader quota is exceeded, a follower out of the ISR gets a throttled
partition answered empty (no error: it asks again); the bytes answered
for throttled partitions are recorded against the quota.
"""
from __future__ import annotations

import asyncio
from typing import NamedTuple

from kcore.clock import monotonic_ms
from kcore.handlers.authz import allowed_on_cluster, allowed_topics
from kcore.handlers.base import BrokerFacade
from kcore.handlers.fetch_ids import (
    LEADER_HINTS_VERSION,
    TOPIC_IDS_VERSION,
    UNKNOWN_ID,
    add_leader_hints,
    forgotten_names,
    inconsistent,
    normalize,
)
from kcore.metadata import TopicPartition
from kcore.protocol.constants import INITIAL_EPOCH, INT32_MAX, INVALID_SESSION_ID, READ_COMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.protocol.messages.fetch import (
    AbortedTransactionDict,
    EpochEndOffsetDict,
    FetchableTopicResponseDict,
    FetchResponseDict,
    PartitionDataDict,
)
from kcore.replication.fetch_session import (
    FINAL_EPOCH,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    next_epoch,
)
from kcore.replication.partition import Partition, PartitionError
from kcore.replication.replica_selector import ReplicaSelector, preferred_read_replica
from kcore.replication.replication_quota import ReplicationQuota
from kcore.security.acl import AclOperation
from kcore.security.quotas import CONSUMER_BYTE_RATE, user_of

SESSIONS_VERSION = 7
# v11 sends the consumer's rack: Kafka then lets followers serve it (KIP-392).
CLIENT_METADATA_VERSION = 11


class _Client(NamedTuple):
    """A v11+ consumer's metadata (Kafka's ClientMetadata): what a replica
    selector looks at. One per request: a tuple is the cheapest to make."""

    rack_id: str
    listener: str


class _Limits(NamedTuple):
    """What one request asks of every partition it reads. A tuple, made
    once per fetch: ~0.4 us, against 1.2 for a frozen dataclass."""

    max_bytes: int
    min_bytes: int
    read_committed: bool
    replica_id: int
    refused: frozenset[str] = frozenset()  # topics the principal may not fetch
    quota: ReplicationQuota | None = None  # a follower's fetch while a leader throttle is set
    client: _Client | None = None  # a v11+ consumer: any replica may serve it
    selector: ReplicaSelector | None = None  # replica.selector.class, for such a consumer


async def handle(broker: BrokerFacade, context, request) -> FetchResponseDict:
    answer = await _handle(broker, context, request)
    if request.api_version >= LEADER_HINTS_VERSION:
        add_leader_hints(broker, context.listener, answer)
    return answer


async def _handle(broker: BrokerFacade, context, request) -> FetchResponseDict:
    body = request.body
    if request.api_version >= TOPIC_IDS_VERSION:
        normalize(broker, body, request.api_version)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
    client = (_Client(body.rack_id, context.listener)
              if body.replica_id < 0 and request.api_version >= CLIENT_METADATA_VERSION else None)
    limits = _Limits(body.max_bytes if request.api_version >= 3 else INT32_MAX,
                     max(body.min_bytes, 1),
                     request.api_version >= 4 and body.isolation_level == READ_COMMITTED,
                     body.replica_id, client=client,
                     selector=broker.replica_manager.replica_selector if client else None)
    if body.replica_id >= 0 and broker.replica_manager.leader_quota.active:
        limits = limits._replace(quota=broker.replica_manager.leader_quota)
    sessions = broker.replica_manager.fetch_sessions
    with_sessions = request.api_version >= SESSIONS_VERSION
    if with_sessions and body.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        answer = await _incremental(broker, context, sessions, request, limits, deadline)
        return _throttle_in_session(broker, context, request, answer)
    if with_sessions and body.session_id != INVALID_SESSION_ID:
        sessions.remove(body.session_id)  # a full fetch closes the session it names
    if broker.authorizer is not None:
        limits = _with_refusals(broker, context, limits, {topic.topic for topic in body.topics})
    while True:
        responses, total, ready, partitions = _read_all(broker, body, limits)
        remaining = deadline - loop.time()
        if ready or total >= limits.min_bytes or remaining <= 0:
            break
        with broker.stats.delayed_fetch:  # Kafka's fetch purgatory
            await broker.replica_manager.wait_for_data(partitions, remaining,
                                                       for_replica=limits.replica_id >= 0)
    throttle_ms = 0
    opens_session = with_sessions and body.session_epoch == INITIAL_EPOCH
    if limits.replica_id < 0 and broker.quotas.active and total:
        throttle_ms = _record_fetched(broker, context, request, total, may_hold_back=not opens_session)
        if throttle_ms < 0:  # over the quota with this data: answered without it
            return _throttled(context, -throttle_ms)
    session_id = INVALID_SESSION_ID
    if opens_session:
        session_id = _open_session(broker, sessions, body, responses, limits)
    _count_bytes_out(broker, responses, limits.replica_id >= 0, limits.quota)
    return _response(ErrorCode.NONE, session_id, responses, throttle_ms)


def _response(error_code: int, session_id: int, responses: list[FetchableTopicResponseDict],
              throttle_ms: int = 0) -> FetchResponseDict:
    return {"throttle_time_ms": throttle_ms, "error_code": error_code, "session_id": session_id,
            "responses": responses}


# -- authorization and quotas ----------------------------------------------------------
def _with_refusals(broker: BrokerFacade, context, limits: _Limits, topics: set[str]) -> _Limits:
    """A follower's fetch needs CLUSTER_ACTION on the cluster (every topic
    refused otherwise), a consumer's READ on each topic."""
    if limits.replica_id >= 0:
        allowed = allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION)
        refused = set() if allowed else topics
    else:
        refused = topics - allowed_topics(broker, context, AclOperation.READ, topics)
    return limits._replace(refused=frozenset(refused)) if refused else limits


def _record_fetched(broker: BrokerFacade, context, request, size: int,
                    may_hold_back: bool) -> int:
    """consumer_byte_rate, as Kafka's: the answer's bytes are recorded; if
    that puts the client over its quota (and the answer may go without
    its data) they are taken back and minus the throttle time is returned.
    An answer worth more than a second of quota goes anyway once nothing
    is owed, or a consumer of large batches would never get one."""
    quotas = broker.quotas
    user, client_id = user_of(context.principal), request.header.client_id or ""
    owed = quotas.throttle_ms(CONSUMER_BYTE_RATE, user, client_id)
    throttle_ms = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size)
    if may_hold_back and throttle_ms > 0 and (
            owed > 0 or not _larger_than_a_second(quotas, user, client_id, size)):
        quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size)
        return -throttle_ms
    context.mute_ms = max(context.mute_ms, throttle_ms)
    return throttle_ms


def _larger_than_a_second(quotas, user: str, client_id: str, size: int) -> bool:
    found = quotas.quota(CONSUMER_BYTE_RATE, user, client_id)
    return found is not None and size > found[0]


def _throttled(context, throttle_ms: int) -> FetchResponseDict:
    """No partitions at all, as Kafka's throttled fetch response."""
    context.mute_ms = max(context.mute_ms, throttle_ms)
    return _response(ErrorCode.NONE, INVALID_SESSION_ID, [], throttle_ms)


def _throttle_in_session(broker: BrokerFacade, context, request,
                         answer: FetchResponseDict) -> FetchResponseDict:
    if request.body.replica_id >= 0 or not broker.quotas.active:
        return answer
    size = sum(piece.size for topic in answer["responses"] for result in topic["partitions"]
               for piece in result["records"] or ())
    if size:
        answer["throttle_time_ms"] = _record_fetched(broker, context, request, size,
                                                     may_hold_back=False)
    return answer


# -- full fetches ---------------------------------------------------------------------
def _read_all(broker: BrokerFacade, body, limits: _Limits):
    """One pass over the request's partitions. `ready` is True when some
    partition answers immediately (``_answers_now``)."""
    responses: list[FetchableTopicResponseDict] = []
    total = 0
    ready = False
    parked = []
    get = broker.replica_manager.get  # per partition: 16 or more lookups a fetch
    for topic in body.topics:
        name = topic.topic
        if name == UNKNOWN_ID:  # v13+: an id this broker does not know
            responses.append(_unknown_id(topic))
            ready = True
            continue
        results: list[PartitionDataDict] = []
        for fetch in topic.partitions:
            partition = get(name, fetch.partition)
            data, size, now = _read(broker, name, fetch.partition, partition, fetch,
                                    fetch.partition_max_bytes, limits, total)
            if now:
                ready = True
            total += size
            if partition is not None:
                parked.append(partition)
            results.append(data)
        responses.append({"topic": name, "topic_id": topic.topic_id, "partitions": results})
    return responses, total, ready, parked


def _unknown_id(topic) -> FetchableTopicResponseDict:
    return {"topic": UNKNOWN_ID, "topic_id": topic.topic_id,
            "partitions": [_error(fetch.partition, ErrorCode.UNKNOWN_TOPIC_ID)
                           for fetch in topic.partitions]}


def _open_session(broker: BrokerFacade, sessions: FetchSessionCache, body,
                  responses: list[FetchableTopicResponseDict], limits: _Limits) -> int:
    """A session holding every partition of this full fetch, each marked
    with what the answer told (0 when the cache has no room)."""
    cached: dict[TopicPartition, CachedPartition] = {}
    for topic in body.topics:
        if topic.topic != UNKNOWN_ID:
            for fetch in topic.partitions:
                cached[(topic.topic, fetch.partition)] = _cached(fetch, topic.topic_id)
    session = sessions.create(limits.replica_id, cached, sessions.now_ms())
    if session is None:
        return INVALID_SESSION_ID
    for topic in responses:
        if topic["topic"] == UNKNOWN_ID:
            continue
        for data in topic["partitions"]:
            key = (topic["topic"], data["partition_index"])
            entry = session.partitions[key]
            entry.must_respond(data["error_code"], bool(data["records"]), data["high_watermark"],
                               data["last_stable_offset"], data["log_start_offset"],
                               _redirects(data))
            session.settle(key, not _caught_up(broker, key, entry, data, limits))
    return session.id


# -- incremental fetches ------------------------------------------------------------
async def _incremental(broker: BrokerFacade, context, sessions: FetchSessionCache, request,
                       limits: _Limits, deadline: float) -> FetchResponseDict:
    body = request.body
    session = sessions.get(body.session_id)
    if session is None:
        return _response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID, [])
    if session.epoch != body.session_epoch:
        return _response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, [])
    sessions.add_partitions(session, {
        (topic.topic, fetch.partition): _cached(fetch, topic.topic_id)
        for topic in body.topics if topic.topic != UNKNOWN_ID for fetch in topic.partitions})
    sessions.forget(session, forgotten_names(broker, session, body, request.api_version))
    unknown = [_unknown_id(topic) for topic in body.topics if topic.topic == UNKNOWN_ID]
    if not len(session):
        sessions.remove(session.id)
        return _response(ErrorCode.NONE, INVALID_SESSION_ID, unknown)
    now_ms = sessions.now_ms()
    session.epoch = next_epoch(session.epoch)
    session.last_used_ms = now_ms
    if session.privileged and now_ms - session.touched_ms >= sessions.follower_touch_interval_ms:
        _touch_idle_partitions(broker, session, now_ms)
    if broker.authorizer is not None:
        limits = _with_refusals(broker, context, limits, {key[0] for key in session.partitions})
    loop = asyncio.get_running_loop()
    while True:
        reads, total, ready = _read_pending(broker, session, limits)
        remaining = deadline - loop.time()
        if ready or unknown or total >= limits.min_bytes or remaining <= 0:
            responses = unknown + _answer(broker, session, reads, limits)
            _count_bytes_out(broker, responses, limits.replica_id >= 0, limits.quota)
            return _response(ErrorCode.NONE, session.id, responses)
        with broker.stats.delayed_fetch:
            await session.wait(remaining)


def _read_pending(broker: BrokerFacade, session: FetchSession,
                  limits: _Limits) -> tuple[list[tuple[TopicPartition, PartitionDataDict]], int, bool]:
    """One pass over the session's pending partitions, changing nothing
    of the session (a pass that ends in a wait is read again)."""
    reads = []
    total = 0
    ready = False
    for key in list(session.pending):
        cached = session.partitions[key]
        if inconsistent(broker, key[0], cached.topic_id):  # v13+: the topic was re-created
            reads.append((key, _error(key[1], ErrorCode.INCONSISTENT_TOPIC_ID)))
            ready = True
            continue
        partition = broker.replica_manager.get(*key)
        data, size, now = _read(broker, key[0], key[1], partition, cached, cached.max_bytes, limits,
                                total)
        ready |= now
        total += size
        reads.append((key, data))
    return reads, total, ready


def _answer(broker: BrokerFacade, session: FetchSession,
            reads: list[tuple[TopicPartition, PartitionDataDict]],
            limits: _Limits) -> list[FetchableTopicResponseDict]:
    """The partitions of the final pass that must answer, grouped by topic
    as they come; the session learns what each was told."""
    responses: list[FetchableTopicResponseDict] = []
    for key, data in reads:
        cached = session.partitions[key]
        if cached.must_respond(data["error_code"], bool(data["records"]), data["high_watermark"],
                               data["last_stable_offset"], data["log_start_offset"],
                               _redirects(data)):
            session.answered(key)
            if not responses or responses[-1]["topic"] != key[0]:
                responses.append({"topic": key[0], "topic_id": cached.topic_id, "partitions": []})
            responses[-1]["partitions"].append(data)
        session.settle(key, not _caught_up(broker, key, cached, data, limits))
    return responses


def _touch_idle_partitions(broker: BrokerFacade, session: FetchSession, now_ms: int) -> None:
    """The follower is still caught up on the partitions it is not
    reading (it would have been told of news): say so to each, as a read
    would, so the ISR keeps it."""
    session.touched_ms = now_ms
    for key, cached in session.partitions.items():
        if key not in session.pending:
            partition = broker.replica_manager.get(*key)
            if partition is not None and partition.is_leader:
                partition.update_follower_fetch_state(session.replica_id, cached.fetch_offset,
                                                      cached.fetcher_log_start_offset)


def _caught_up(broker: BrokerFacade, key: TopicPartition, cached: CachedPartition,
               data: PartitionDataDict, limits: _Limits) -> bool:
    """Nothing left to read at the cached offset: the partition may wait
    for news instead of being read again (one that answered at once is
    read again, as Kafka reads every partition of a session)."""
    partition = broker.replica_manager.get(*key)
    if partition is None or _answers_now(data):
        return False
    if limits.replica_id >= 0:
        return cached.fetch_offset >= partition.log_end_offset
    upper = partition.last_stable_offset if limits.read_committed else partition.high_watermark
    return cached.fetch_offset >= upper


# -- one partition ----------------------------------------------------------------------
def _read(broker: BrokerFacade, topic: str, index: int, partition: Partition | None, fetch,
          partition_max_bytes: int, limits: _Limits,
          total: int) -> tuple[PartitionDataDict, int, bool]:
    """The answer for one partition, its bytes of records, and whether it
    answers at once (``_answers_now``, told here without reading it back)."""
    if limits.refused and topic in limits.refused:
        return _error(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED), 0, True
    if partition is None:
        return _error(index, _missing_code(broker, topic, index)), 0, True
    if limits.selector is not None and limits.client is not None and partition.is_leader:
        preferred = preferred_read_replica(
            limits.selector, partition, broker.replica_manager.metadata_cache,
            limits.client.rack_id, limits.client.listener, fetch.fetch_offset,
            monotonic_ms(partition.clock))
        if preferred >= 0:
            return _redirect(partition, index, fetch, preferred), 0, True
    limit = max(limits.max_bytes - total, 0)
    if partition_max_bytes < limit:
        limit = partition_max_bytes
    code, slices, diverging = _read_one(partition, fetch, limit, limits, total == 0)
    last_stable_offset = partition.last_stable_offset
    data: PartitionDataDict = {
        "partition_index": index,
        "error_code": code,
        "high_watermark": partition.high_watermark,
        "last_stable_offset": last_stable_offset,
        "log_start_offset": partition.log.log_start_offset,
        "aborted_transactions": (_aborted(partition, fetch.fetch_offset, slices, last_stable_offset)
                                 if limits.read_committed else None),
        "preferred_read_replica": -1,
        "records": slices if slices else b"",
    }
    if diverging is not None:
        data["diverging_epoch"] = diverging
        return data, 0, True
    if not slices:  # most partitions of a full fetch: no generator for them
        return data, 0, code != ErrorCode.NONE
    return data, sum(s.size for s in slices), code != ErrorCode.NONE


def _read_one(partition: Partition, fetch, limit: int, limits: _Limits,
              min_one_message: bool) -> tuple[int, list, EpochEndOffsetDict | None]:
    """(error code, file slices, diverging epoch) of one partition's read."""
    replica_id = limits.replica_id
    if not partition.is_leader and (replica_id >= 0 or limits.client is None):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, [], None
    code = partition.check_leader_epoch(fetch.current_leader_epoch)
    if code != ErrorCode.NONE:
        return code, [], None
    try:
        if replica_id >= 0:
            if not partition.is_follower(replica_id):
                return ErrorCode.NOT_LEADER_OR_FOLLOWER, [], None
            if fetch.last_fetched_epoch >= 0:  # v12
                diverging = _diverging_epoch(partition, fetch)
                if diverging is not None:  # not the follower's progress: it truncates first
                    return code, [], diverging
            # Read first: a fetch offset outside the log (a follower with a
            # divergent tail) must not count as the follower's progress.
            if limits.quota is not None and _leader_throttled(limits.quota, partition, replica_id,
                                                              fetch.fetch_offset):
                slices = []
            else:
                slices = partition.read_for_follower(fetch.fetch_offset, limit, min_one_message)
            return partition.update_follower_fetch_state(replica_id, fetch.fetch_offset,
                                                         _fetcher_log_start_offset(fetch)), slices, None
        if fetch.last_fetched_epoch >= 0:  # v12
            diverging = _diverging_epoch(partition, fetch)
            if diverging is not None:
                return code, [], diverging
        return code, partition.read(fetch.fetch_offset, limit, limits.read_committed,
                                    min_one_message), None
    except PartitionError as exc:
        return exc.error_code, [], None


def _diverging_epoch(partition: Partition, fetch) -> EpochEndOffsetDict | None:
    """Fetch v12's check of the fetcher's last fetched epoch (>= 0) against
    this replica's epoch cache (module doc): the diverging epoch, or None."""
    last_fetched_epoch = fetch.last_fetched_epoch
    epoch, end_offset = partition.end_offset_for_epoch(last_fetched_epoch)
    if epoch < 0 or end_offset < 0:
        raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"cannot tell where epoch {last_fetched_epoch} ends")
    fetch_offset = fetch.fetch_offset
    if fetch_offset < partition.log_start_offset:
        raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"offset {fetch_offset} is below the log start offset "
                             f"{partition.log_start_offset}")
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return {"epoch": epoch, "end_offset": end_offset}
    return None


def _redirect(partition: Partition, index: int, fetch, preferred: int) -> PartitionDataDict:
    """The leader's answer naming the replica to read from, without data
    (Kafka reads nothing then)."""
    code = partition.check_leader_epoch(fetch.current_leader_epoch)
    if code != ErrorCode.NONE:
        return _error(index, code)
    return {"partition_index": index, "error_code": ErrorCode.NONE,
            "high_watermark": partition.high_watermark,
            "last_stable_offset": partition.last_stable_offset,
            "log_start_offset": partition.log_start_offset, "aborted_transactions": None,
            "preferred_read_replica": preferred, "records": b""}


def _redirects(data: PartitionDataDict) -> bool:
    """A diverging epoch or a preferred read replica: the fetcher must act."""
    return "diverging_epoch" in data or data["preferred_read_replica"] >= 0


def _answers_now(data: PartitionDataDict) -> bool:
    """An error, a diverging epoch or a preferred read replica answers at
    once (Kafka's fetchMessages), whatever min_bytes says."""
    return (data["error_code"] != ErrorCode.NONE or data["preferred_read_replica"] >= 0
            or "diverging_epoch" in data)


def _cached(fetch, topic_id) -> CachedPartition:
    """A request's partition as a session keeps it."""
    return CachedPartition(fetch.fetch_offset, fetch.partition_max_bytes, fetch.current_leader_epoch,
                           fetch.log_start_offset, last_fetched_epoch=fetch.last_fetched_epoch,
                           topic_id=topic_id)


def _fetcher_log_start_offset(fetch) -> int:
    """The log start offset the fetcher reported: a request's partition
    names it ``log_start_offset``, a session's cached one keeps that name
    for what the fetcher was told."""
    if isinstance(fetch, CachedPartition):
        return fetch.fetcher_log_start_offset
    return fetch.log_start_offset


def _aborted(partition: Partition, fetch_offset: int, slices: list,
             last_stable_offset: int) -> list[AbortedTransactionDict]:
    """read_committed: the aborted transactions the returned data overlaps
    (it ends below ``last_stable_offset``, the answer's LSO); the consumer
    drops those producers' batches in those ranges."""
    if not slices:
        return []
    return [{"producer_id": txn.producer_id, "first_offset": txn.first_offset}
            for txn in partition.log.collect_aborted_txns(fetch_offset, last_stable_offset)]


def _leader_throttled(quota: ReplicationQuota, partition: Partition, replica_id: int,
                      fetch_offset: int) -> bool:
    """Kafka's shouldLeaderThrottle: a follower out of the ISR, a
    throttled partition, the quota exceeded. Only a fetch offset inside
    the log is held back: one outside it takes the read, which answers
    the error the follower must act on."""
    return (replica_id not in partition.isr
            and partition.log_start_offset <= fetch_offset < partition.log_end_offset
            and quota.is_throttled(partition.topic, partition.index) and quota.exceeded())


def _count_bytes_out(broker: BrokerFacade, responses: list[FetchableTopicResponseDict], follower: bool,
                     quota: ReplicationQuota | None = None) -> None:
    """BytesOut / ReplicationBytesOut of the answer (not of the passes
    that found too little and waited); a follower's bytes of throttled
    partitions count against the leader quota."""
    for topic in responses:
        name = topic["topic"]
        if name == UNKNOWN_ID:
            continue
        size = 0
        for result in topic["partitions"]:
            records = result["records"]
            part = sum(piece.size for piece in records) if records else 0
            if part and quota is not None and quota.is_throttled(name, result["partition_index"]):
                quota.record(part)
            size += part
        broker.stats.topics.record_fetch(name, size, follower)


def _missing_code(broker: BrokerFacade, topic: str, index: int) -> int:
    """A partition this broker does not host: in a failed log dir
    (KAFKA_STORAGE_ERROR), another broker's (NOT_LEADER_OR_FOLLOWER,
    clients refresh metadata) or none at all."""
    return broker.replica_manager.partition_error(topic, index)


def _error(index: int, code: int) -> PartitionDataDict:
    return {"partition_index": index, "error_code": code, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
            "preferred_read_replica": -1, "records": b""}


"""Fetch (key 1): file slices of whole batches, long-polled.

Each partition contributes whole batches from its fetch offset, capped by
partition_max_bytes and what is left of max_bytes; the first partition with
data always returns at least one batch even if larger (KIP-74). When fewer
than min_bytes are ready the request waits, woken by new data, until
max_wait_ms. Fetch sessions (KIP-227) are declined with session_id 0, which
makes clients send full requests.

Consumers (replica_id -1) read from the leader up to the high watermark
(last stable offset under read_committed, with the aborted transactions
the returned data overlaps) and are woken when it moves.
Followers (replica_id = their broker id) read up to the log end offset, are
woken by appends, and each fetch reports their progress to the leader
(the fetch offset is their log end offset), which moves the ISR and the
high watermark. A fetch from a broker that is not a replica of the
partition, or sent to a broker that is not its leader, gets
NOT_LEADER_OR_FOLLOWER and reads nothing.
"""
from __future__ import annotations

import asyncio

from kcore.handlers.authz import allowed_on_cluster, allowed_topics
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import PartitionError
from kcore.security.acl import AclOperation
from kcore.security.quotas import CONSUMER_BYTE_RATE, user_of

READ_COMMITTED = 1


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
    max_bytes = body.max_bytes if request.api_version >= 3 else 2**31 - 1
    read_committed = request.api_version >= 4 and body.isolation_level == READ_COMMITTED
    replica_id = body.replica_id
    refused = _refused_topics(broker, context, body) if broker.authorizer is not None else None
    throttle_ms = 0
    while True:
        responses, total, ready, partitions = _read_all(broker, body, max_bytes, read_committed,
                                                        replica_id, refused)
        remaining = deadline - loop.time()
        if ready or total >= max(body.min_bytes, 1) or remaining <= 0:
            if replica_id < 0 and broker.quotas.active and total:
                throttle_ms = _record_fetched(broker, context, request, total)
                if throttle_ms < 0:  # over the quota with this data: answer without it
                    return _throttled(context, -throttle_ms)
            _count_bytes_out(broker, responses, replica_id >= 0)
            return {"throttle_time_ms": throttle_ms, "error_code": ErrorCode.NONE, "session_id": 0,
                    "responses": responses}
        with broker.stats.delayed_fetch:  # Kafka's fetch purgatory
            await broker.replica_manager.wait_for_data(partitions, remaining,
                                                       for_replica=replica_id >= 0)


def _refused_topics(broker: BrokerFacade, context, body) -> set[str]:
    """Topics this principal may not fetch: a follower's fetch needs
    CLUSTER_ACTION on the cluster (every topic refused otherwise), a
    consumer's READ on each topic."""
    topics = {topic.topic for topic in body.topics}
    if body.replica_id >= 0:
        return set() if allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION) else topics
    return topics - allowed_topics(broker, context, AclOperation.READ, topics)


def _record_fetched(broker: BrokerFacade, context, request, size: int) -> int:
    """consumer_byte_rate, as Kafka's: the answer's bytes are recorded; if
    that puts the client over its quota they are taken back and the answer
    goes without data (minus the throttle time, to the caller). An answer
    worth more than a second of quota goes anyway once nothing is owed, or
    a consumer of large batches would never get one."""
    quotas = broker.quotas
    user, client_id = user_of(context.principal), request.header.client_id or ""
    owed = quotas.throttle_ms(CONSUMER_BYTE_RATE, user, client_id)
    throttle_ms = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size)
    if throttle_ms > 0 and (owed > 0 or not _larger_than_a_second(quotas, user, client_id, size)):
        quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size)
        return -throttle_ms
    context.mute_ms = max(context.mute_ms, throttle_ms)
    return throttle_ms


def _larger_than_a_second(quotas, user: str, client_id: str, size: int) -> bool:
    found = quotas.quota(CONSUMER_BYTE_RATE, user, client_id)
    return found is not None and size > found[0]


def _throttled(context, throttle_ms: int) -> dict:
    """No partitions at all, as Kafka's throttled fetch response."""
    context.mute_ms = max(context.mute_ms, throttle_ms)
    return {"throttle_time_ms": throttle_ms, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": []}


def _read_all(broker, body, max_bytes: int, read_committed: bool, replica_id: int,
              refused: set[str] | None):
    """One pass over the request's partitions. `ready` is True when some
    partition has an error to report, which answers immediately."""
    responses = []
    total = 0
    ready = False
    parked = []
    for topic in body.topics:
        results = []
        if refused and topic.topic in refused:
            results = [_error(fetch.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                       for fetch in topic.partitions]
            responses.append({"topic": topic.topic, "partitions": results})
            ready = True
            continue
        for fetch in topic.partitions:
            partition = broker.replica_manager.get(topic.topic, fetch.partition)
            if partition is None:
                results.append(_error(fetch.partition, _missing_code(broker, topic.topic,
                                                                     fetch.partition)))
                ready = True
                continue
            limit = min(fetch.partition_max_bytes, max(max_bytes - total, 0))
            code, slices = _read_one(partition, fetch, limit, read_committed, replica_id,
                                     min_one_message=total == 0)
            ready |= code != ErrorCode.NONE
            size = sum(s.size for s in slices)
            total += size
            parked.append(partition)
            results.append({
                "partition_index": fetch.partition,
                "error_code": code,
                "high_watermark": partition.high_watermark,
                "last_stable_offset": partition.last_stable_offset,
                "log_start_offset": partition.log_start_offset,
                "aborted_transactions": (_aborted(partition, fetch.fetch_offset, slices)
                                         if read_committed else None),
                "preferred_read_replica": -1,
                "records": slices if slices else b"",
            })
        responses.append({"topic": topic.topic, "partitions": results})
    return responses, total, ready, parked


def _read_one(partition, fetch, limit: int, read_committed: bool, replica_id: int,
              min_one_message: bool) -> tuple[int, list]:
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, []
    code = partition.check_leader_epoch(fetch.current_leader_epoch)
    if code != ErrorCode.NONE:
        return code, []
    try:
        if replica_id >= 0:
            if not partition.is_follower(replica_id):
                return ErrorCode.NOT_LEADER_OR_FOLLOWER, []
            # Read first: a fetch offset outside the log (a follower with a
            # divergent tail) must not count as the follower's progress.
            slices = partition.read_for_follower(fetch.fetch_offset, limit, min_one_message)
            return partition.update_follower_fetch_state(replica_id, fetch.fetch_offset), slices
        return code, partition.read(fetch.fetch_offset, limit, read_committed, min_one_message)
    except PartitionError as exc:
        return exc.error_code, []


def _aborted(partition, fetch_offset: int, slices: list) -> list[dict]:
    """read_committed: the aborted transactions the returned data overlaps;
    the consumer drops those producers' batches in those ranges."""
    if not slices:
        return []
    return [{"producer_id": txn.producer_id, "first_offset": txn.first_offset}
            for txn in partition.log.collect_aborted_txns(fetch_offset,
                                                          partition.last_stable_offset)]


def _count_bytes_out(broker, responses: list, follower: bool) -> None:
    """BytesOut / ReplicationBytesOut of the answer (not of the passes
    that found too little and waited)."""
    for topic in responses:
        size = sum(piece.size for result in topic["partitions"] for piece in result["records"] or ())
        broker.stats.topics.record_fetch(topic["topic"], size, follower)


def _missing_code(broker, topic: str, index: int) -> int:
    """A partition this broker does not host: another broker's
    (NOT_LEADER_OR_FOLLOWER, clients refresh metadata) or none at all."""
    if broker.replica_manager.metadata_cache.partition(topic, index) is not None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _error(index: int, code: int) -> dict:
    return {"partition_index": index, "error_code": code, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
            "preferred_read_replica": -1, "records": b""}

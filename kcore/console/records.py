"""Deleting a topic's records from the console: DeleteRecords, as
``kcore delete-records`` and admin clients send it, done by this broker.

``POST /api/topics/T/delete-records`` with ``{"offset": N, "partitions":
[...]?}`` moves the log start offset of each named partition (every one
when none are named) to N, -1 meaning its high watermark. Partitions this
broker leads go through the replica manager as a DeleteRecords request
would (replication/delete_records.py); the others are sent to their
leaders as DeleteRecords requests, over the inter-broker listener. The
answer lists every partition with its new low watermark or Kafka's error
name, as the tool prints them; it is 200 even when some partitions
failed (the others' records are gone), so the page can show both.
"""
from __future__ import annotations

import asyncio
import logging

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.console.base import ApiError, ApiRequest, ConsoleSource, body_object, error_name, required_int, unknown_topic
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication.delete_records import DeleteRecordsResult, delete_records

log = logging.getLogger(__name__)

# What the leaders may take to hear from their followers: inside the
# console's own API_TIMEOUT_S (15 s), so the page gets every partition's
# answer (REQUEST_TIMED_OUT at worst) rather than a bare 504.
DELETE_TIMEOUT_S = 10.0
# A leader that does not answer within this is reported, not waited for.
REMOTE_TIMEOUT_S = DELETE_TIMEOUT_S + 2.0


async def delete_topic_records(broker: ConsoleSource, request: ApiRequest) -> dict:
    topic = request.params["topic"]
    body = body_object(request)
    offset = required_int(body, "offset", low=-(2**63), high=2**63 - 1)
    cache = broker.replica_manager.metadata_cache
    if not cache.contains(topic):
        raise unknown_topic(topic)
    indexes = body.get("partitions") or sorted(cache.partitions(topic))
    if not isinstance(indexes, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
        raise ApiError(400, "INVALID_REQUEST", "partitions must be a list of partition numbers")
    results: dict[int, DeleteRecordsResult] = {}
    local: list[int] = []
    remote: dict[int, list[int]] = {}
    for index in dict.fromkeys(indexes):
        state = cache.partition(topic, index)
        if state is None:
            results[index] = DeleteRecordsResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif state.leader == broker.config.broker_id:
            local.append(index)
        elif cache.broker(state.leader) is None:
            results[index] = DeleteRecordsResult(ErrorCode.LEADER_NOT_AVAILABLE)
        else:
            remote.setdefault(state.leader, []).append(index)
    pool = BrokerPool(f"kcore-console-{broker.config.broker_id}", cache.address_of, REMOTE_TIMEOUT_S)
    try:
        answers = await asyncio.gather(
            _delete_here(broker, topic, local, offset),
            *(_ask_leader(pool, leader, topic, wanted, offset) for leader, wanted in remote.items()))
    finally:
        pool.close()
    for answer in answers:
        results.update(answer)
    return {"topic": topic, "offset": offset, "partitions": [
        {"partition": index, "low_watermark": result.low_watermark,
         "error": None if result.error_code == ErrorCode.NONE else error_name(result.error_code)}
        for index, result in sorted(results.items())]}


async def _delete_here(broker: ConsoleSource, topic: str, indexes: list[int],
                       offset: int) -> dict[int, DeleteRecordsResult]:
    if not indexes:
        return {}
    found = await delete_records(broker.replica_manager, {(topic, index): offset for index in indexes},
                                 DELETE_TIMEOUT_S)
    return {index: result for (_, index), result in found.items()}


async def _ask_leader(pool: BrokerPool, leader: int, topic: str, indexes: list[int],
                      offset: int) -> dict[int, DeleteRecordsResult]:
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": index, "offset": offset}
                                                       for index in indexes]}],
            "timeout_ms": int(DELETE_TIMEOUT_S * 1000)}
    try:
        connection = await pool.connection(leader)
        response = await asyncio.wait_for(connection.request(ApiKey.DELETE_RECORDS, body), REMOTE_TIMEOUT_S)
    except TimeoutError:
        pool.drop(leader)
        return dict.fromkeys(indexes, DeleteRecordsResult(ErrorCode.REQUEST_TIMED_OUT))
    except (BrokerConnectionError, KafkaError, OSError, LookupError) as exc:
        log.warning("DeleteRecords to broker %d failed: %s", leader, exc)
        pool.drop(leader)
        return dict.fromkeys(indexes, DeleteRecordsResult(ErrorCode.NETWORK_EXCEPTION))
    return {p.partition_index: DeleteRecordsResult(p.error_code, p.low_watermark)
            for t in response.topics for p in t.partitions}

"""AddPartitionsToTxn (key 24): the partitions a transaction writes, before
it writes them (so its coordinator knows where the markers go).

A partition that does not exist fails the whole request: it gets
UNKNOWN_TOPIC_OR_PARTITION and every other partition OPERATION_NOT_ATTEMPTED,
and the transaction is left as it was (Kafka's answer)."""
from __future__ import annotations

from kcore.handlers import txn_errors
from kcore.handlers.authz import allowed_topics, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    requested = [(topic.name, index) for topic in body.v3_and_below_topics
                 for index in topic.partitions]
    cache = broker.replica_manager.metadata_cache
    unknown = {tp for tp in requested if cache.partition(*tp) is None}
    errors: dict[tuple[str, int], int]
    transactional_id = body.v3_and_below_transactional_id
    writable = allowed_topics(broker, context, AclOperation.WRITE, {tp[0] for tp in requested})
    if not txn_allowed(broker, context, AclOperation.WRITE, transactional_id):
        errors = dict.fromkeys(requested, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif any(tp[0] not in writable for tp in requested):
        errors = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] not in writable
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in requested}
    elif unknown:
        errors = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in requested}
    else:
        code = await broker.txn_coordinator.add_partitions(
            body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch, set(requested))
        code = txn_errors.for_version(ApiKey.ADD_PARTITIONS_TO_TXN, request.api_version, code)
        errors = dict.fromkeys(requested, code)
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": topic.name, "results_by_partition": [
            {"partition_index": index, "partition_error_code": errors[(topic.name, index)]}
            for index in topic.partitions]}
        for topic in body.v3_and_below_topics]}

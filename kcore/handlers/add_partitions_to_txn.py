"""AddPartitionsToTxn (key 24): the partitions a transaction writes, before
it writes them (so its coordinator knows where the markers go).

A partition that does not exist fails the whole transaction's request: it
gets UNKNOWN_TOPIC_OR_PARTITION and every other partition
OPERATION_NOT_ATTEMPTED, and the transaction is left as it was (Kafka's
answer).

Versions 0-3 come from clients: one transaction, WRITE on its
transactional id and on each topic. Versions 4-5 come from brokers (KIP-890
part 1): several transactions, the sender needs CLUSTER_ACTION on the
cluster (else the top-level CLUSTER_AUTHORIZATION_FAILED), and a
transaction with ``verify_only`` is only checked, partition by partition,
against its ongoing transaction (``TransactionCoordinator.verify_partitions``);
a partition outside it is TRANSACTION_ABORTABLE at v5 and INVALID_TXN_STATE
at v4, which predates that code."""
from __future__ import annotations

import asyncio

from kcore.handlers import txn_errors
from kcore.handlers.authz import allowed_on_cluster, allowed_topics, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import BROKER_VERSIONS_FROM, ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_BROKER_VERSION = BROKER_VERSIONS_FROM[ApiKey.ADD_PARTITIONS_TO_TXN]
FIRST_ABORTABLE_VERSION = 5

TopicPartition = tuple[str, int]


async def handle(broker: BrokerFacade, context, request):
    if request.api_version >= FIRST_BROKER_VERSION:
        return await _handle_for_brokers(broker, context, request)
    body = request.body
    requested = [(topic.name, index) for topic in body.v3_and_below_topics
                 for index in topic.partitions]
    transactional_id = body.v3_and_below_transactional_id
    writable = allowed_topics(broker, context, AclOperation.WRITE, {tp[0] for tp in requested})
    errors: dict[TopicPartition, int]
    if not txn_allowed(broker, context, AclOperation.WRITE, transactional_id):
        errors = dict.fromkeys(requested, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif any(tp[0] not in writable for tp in requested):
        errors = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] not in writable
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in requested}
    else:
        errors = _unknown(broker, requested) or await _add(
            broker, request.api_version, transactional_id, body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch, requested)
    return {"throttle_time_ms": 0,
            "results_by_topic_v3_and_below": _topic_results(body.v3_and_below_topics, errors)}


async def _handle_for_brokers(broker: BrokerFacade, context, request):
    if not allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results_by_transaction": []}
    results = await asyncio.gather(*(_transaction(broker, request.api_version, transaction)
                                     for transaction in request.body.transactions))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": results}


async def _transaction(broker: BrokerFacade, version: int, transaction) -> dict:
    requested = [(topic.name, index) for topic in transaction.topics for index in topic.partitions]
    errors = _unknown(broker, requested)
    if not errors and transaction.verify_only:
        errors = broker.txn_coordinator.verify_partitions(
            transaction.transactional_id, transaction.producer_id, transaction.producer_epoch,
            set(requested))
        if version < FIRST_ABORTABLE_VERSION:
            errors = {tp: ErrorCode.INVALID_TXN_STATE if code == ErrorCode.TRANSACTION_ABORTABLE
                      else code for tp, code in errors.items()}
    elif not errors:
        errors = await _add(broker, version, transaction.transactional_id,
                            transaction.producer_id, transaction.producer_epoch, requested)
    return {"transactional_id": transaction.transactional_id,
            "topic_results": _topic_results(transaction.topics, errors)}


def _unknown(broker: BrokerFacade, requested: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The answer when a requested partition does not exist, else {}."""
    cache = broker.replica_manager.metadata_cache
    unknown = {tp for tp in requested if cache.partition(*tp) is None}
    if not unknown:
        return {}
    return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in requested}


async def _add(broker: BrokerFacade, version: int, transactional_id: str, producer_id: int,
               producer_epoch: int, requested: list[TopicPartition]) -> dict[TopicPartition, int]:
    code = await broker.txn_coordinator.add_partitions(transactional_id, producer_id,
                                                       producer_epoch, set(requested))
    return dict.fromkeys(requested, txn_errors.for_version(ApiKey.ADD_PARTITIONS_TO_TXN, version,
                                                           code))


def _topic_results(topics, errors: dict[TopicPartition, int]) -> list[dict]:
    return [{"name": topic.name, "results_by_partition": [
        {"partition_index": index, "partition_error_code": errors[(topic.name, index)]}
        for index in topic.partitions]}
        for topic in topics]

"""DescribeTransactions (key 65): the state of transactional ids this
broker coordinates (others: NOT_COORDINATOR; unknown ids:
TRANSACTIONAL_ID_NOT_FOUND)."""
from __future__ import annotations

from kcore.handlers.authz import txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    states = []
    for transactional_id in request.body.transactional_ids:
        code, metadata = broker.txn_coordinator.describe(transactional_id)
        if not txn_allowed(broker, context, AclOperation.DESCRIBE, transactional_id):
            code, metadata = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        if metadata is None:
            states.append({"error_code": code, "transactional_id": transactional_id,
                           "transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
            continue
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(metadata.partitions):
            topics.setdefault(topic, []).append(index)
        states.append({"error_code": ErrorCode.NONE, "transactional_id": transactional_id,
                       "transaction_state": metadata.state.kafka_name,
                       "transaction_timeout_ms": metadata.timeout_ms,
                       "transaction_start_time_ms": metadata.start_ms,
                       "producer_id": metadata.producer_id,
                       "producer_epoch": metadata.producer_epoch,
                       "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]})
    return {"throttle_time_ms": 0, "transaction_states": states}

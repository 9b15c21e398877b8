"""InitProducerId (key 22): a producer id and epoch, for an idempotent
producer (no transactional id: any broker hands out a fresh id) or a
transactional one (its coordinator bumps the id's epoch, fencing older
producers with the same transactional id; kcore.coordinator.txn)."""
from __future__ import annotations

from kcore.handlers import txn_errors
from kcore.handlers.authz import allowed_on_cluster, client_host, txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation, ResourceType

FIRST_EXPECTED_PRODUCER_VERSION = 3


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    refusal = _refusal(broker, context, body.transactional_id)
    if refusal is not None:
        return {"throttle_time_ms": 0, "error_code": refusal, "producer_id": -1,
                "producer_epoch": -1}
    expected = ((body.producer_id, body.producer_epoch)
                if request.api_version >= FIRST_EXPECTED_PRODUCER_VERSION else (-1, -1))
    result = await broker.txn_coordinator.init_producer_id(
        body.transactional_id, body.transaction_timeout_ms, *expected)
    return {"throttle_time_ms": 0,
            "error_code": txn_errors.for_version(ApiKey.INIT_PRODUCER_ID, request.api_version,
                                                 result.error_code),
            "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}


def _refusal(broker: BrokerFacade, context, transactional_id: str | None) -> int | None:
    """WRITE on the transactional id; without one (idempotence only)
    IDEMPOTENT_WRITE on the cluster or WRITE on any topic, existing or not:
    an ACL of a prefix the producer's topics will be created under is
    enough (Kafka's KafkaApis, KIP-679)."""
    if broker.authorizer is None:
        return None
    if transactional_id:
        if txn_allowed(broker, context, AclOperation.WRITE, transactional_id):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if allowed_on_cluster(broker, context, AclOperation.IDEMPOTENT_WRITE):
        return None
    if broker.authorizer.authorize_by_resource_type(context.principal, client_host(context),
                                                    AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED

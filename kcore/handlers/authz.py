"""Authorization as handlers ask for it: one call per resource, with
Kafka's error code of each resource type.

Without an authorizer (``authorizer.class.name`` empty) every check is one
``is None`` test: nothing else runs on the hot path.
"""
from __future__ import annotations

from collections.abc import Iterable

from kcore.handlers.base import BrokerFacade
from kcore.protocol.constants import ConfigResourceType
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    operations_bit_field,
)

# KIP-430: the authorized-operations field of a resource that was not asked
# for (INT32_MIN, the schemas' default).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

DENIED_CODES = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def client_host(context) -> str:
    peer = context.peer
    return peer[0] if isinstance(peer, tuple) and peer else str(peer)


def allowed(broker: BrokerFacade, context, op: AclOperation, kind: ResourceType,
            name: str) -> bool:
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(context.principal, client_host(context), op, kind, name)


def allowed_on_cluster(broker: BrokerFacade, context, op: AclOperation) -> bool:
    return allowed(broker, context, op, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_operations(broker: BrokerFacade, context, kind: ResourceType, name: str) -> int:
    """KIP-430: the bit field of the operations the principal may do on
    the resource, among those ACLs grant on its type; all of them without
    an authorizer (Kafka's AuthHelper.authorizedOperations)."""
    supported = SUPPORTED_OPERATIONS[kind]
    if broker.authorizer is None:
        return operations_bit_field(supported)
    return operations_bit_field(op for op in supported if allowed(broker, context, op, kind, name))


def cluster_authorized_operations(broker: BrokerFacade, context) -> int:
    """The cluster's operations for Metadata and DescribeCluster: 0 to a
    principal that may not DESCRIBE the cluster, as Kafka answers."""
    if not allowed_on_cluster(broker, context, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(broker, context, ResourceType.CLUSTER, CLUSTER_NAME)


def acl_admin_refusal(broker: BrokerFacade, context,
                      op: AclOperation) -> tuple[int, str | None] | None:
    """Why CreateAcls / DeleteAcls (ALTER) or DescribeAcls (DESCRIBE on
    the cluster) is refused as a whole, as (code, message); None: it is not."""
    if broker.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, "no authorizer is configured"
    if not allowed_on_cluster(broker, context, op):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return None


def topic_allowed(broker: BrokerFacade, context, op: AclOperation, topic: str) -> bool:
    return allowed(broker, context, op, ResourceType.TOPIC, topic)


def group_allowed(broker: BrokerFacade, context, op: AclOperation, group: str) -> bool:
    return allowed(broker, context, op, ResourceType.GROUP, group)


def txn_allowed(broker: BrokerFacade, context, op: AclOperation, transactional_id: str) -> bool:
    return allowed(broker, context, op, ResourceType.TRANSACTIONAL_ID, transactional_id)


def allowed_topics(broker: BrokerFacade, context, op: AclOperation,
                   topics: Iterable[str]) -> set[str]:
    """The subset of ``topics`` the principal may ``op``."""
    names = set(topics)
    authorizer = broker.authorizer
    if authorizer is None:
        return names
    host = client_host(context)
    return {name for name in names
            if authorizer.authorize(context.principal, host, op, ResourceType.TOPIC, name)}


def may_create_topic(broker: BrokerFacade, context, topic: str) -> bool:
    """CREATE on the cluster, or on the topic (Kafka's CreateTopics and
    Metadata auto-creation)."""
    return (allowed_on_cluster(broker, context, AclOperation.CREATE)
            or topic_allowed(broker, context, AclOperation.CREATE, topic))


def config_refusal(broker: BrokerFacade, context, op: AclOperation, resource_type: int,
                   name: str) -> int | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on a topic, or on the cluster for
    a broker's configs: the error code of a refusal, or None."""
    if broker.authorizer is None:
        return None
    if resource_type == ConfigResourceType.TOPIC:
        return None if topic_allowed(broker, context, op, name) else DENIED_CODES[ResourceType.TOPIC]
    if resource_type == ConfigResourceType.BROKER:
        return None if allowed_on_cluster(broker, context, op) else DENIED_CODES[ResourceType.CLUSTER]
    if resource_type == ConfigResourceType.GROUP:
        return None if group_allowed(broker, context, op, name) else DENIED_CODES[ResourceType.GROUP]
    return None

"""What the share-state APIs (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary) share: they are broker-to-broker requests to
the share coordinator (CLUSTER_ACTION on the cluster with an authorizer),
one result per partition asked for."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kcore.coordinator.share.records import ShareKey
from kcore.handlers.authz import allowed_on_cluster
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

PartitionAnswer = Callable[[ShareKey, Any], Awaitable[dict[str, Any]]]


async def per_partition(broker: BrokerFacade, context, body, answer: PartitionAnswer) -> dict[str, Any]:
    allowed = allowed_on_cluster(broker, context, AclOperation.CLUSTER_ACTION)
    results = []
    for topic in body.topics:
        partitions = []
        for partition in topic.partitions:
            key = ShareKey(body.group_id, topic.topic_id, partition.partition)
            if not allowed:
                partitions.append(error(partition.partition, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
            else:
                partitions.append(await answer(key, partition))
        results.append({"topic_id": topic.topic_id, "partitions": partitions})
    return {"results": results}


def error(index: int, code: int) -> dict[str, Any]:
    return {"partition": index, "error_code": code, "error_message": None}

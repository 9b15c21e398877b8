"""DescribeProducers (key 61): the producers a partition leader knows,
with the first offset of each one's open transaction (KIP-664: how
`kcore transactions` finds a hanging transaction)."""
from __future__ import annotations

from kcore.handlers.authz import topic_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    topics = []
    for topic in request.body.topics:
        partitions = []
        readable = topic_allowed(broker, context, AclOperation.READ, topic.name)
        for index in topic.partition_indexes:
            partitions.append(_describe(broker, topic.name, index) if readable else
                              {"partition_index": index,
                               "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                               "error_message": None, "active_producers": []})
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _describe(broker: BrokerFacade, topic: str, index: int) -> dict:
    partition = broker.replica_manager.get(topic, index)
    if partition is None or not partition.is_leader:
        code = (broker.replica_manager.partition_error(topic, index) if partition is None
                else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return {"partition_index": index, "error_code": code, "error_message": None,
                "active_producers": []}
    return {"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
            "active_producers": [
                {"producer_id": entry.producer_id, "producer_epoch": entry.epoch,
                 "last_sequence": entry.last_seq, "last_timestamp": entry.last_timestamp,
                 "coordinator_epoch": entry.coordinator_epoch,
                 "current_txn_start_offset": entry.current_txn_first_offset}
                for entry in partition.producers.producers.values()]}

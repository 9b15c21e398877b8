"""DeleteRecords (key 21): move partitions' log start offsets forward, as
Kafka's KafkaApis.handleDeleteRecordsRequest does.

Each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED otherwise, before
anything else is looked at), each partition must exist in this broker's
metadata (UNKNOWN_TOPIC_OR_PARTITION); the rest is the replica manager's
(replication/delete_records.py): the answer comes once every named
partition's low watermark reached its new log start offset, or after
timeout_ms with REQUEST_TIMED_OUT. The low watermark is -1 with any error.
"""
from __future__ import annotations

from kcore.handlers.authz import allowed_topics
from kcore.handlers.base import BrokerFacade
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.delete_records import DeleteRecordsResult, delete_records
from kcore.security.acl import AclOperation


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    allowed = allowed_topics(broker, context, AclOperation.DELETE, (t.name for t in body.topics))
    cache = broker.replica_manager.metadata_cache
    results: dict[TopicPartition, DeleteRecordsResult] = {}
    offsets: dict[TopicPartition, int] = {}
    for topic in body.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if topic.name not in allowed:
                results[key] = DeleteRecordsResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif cache.partition(*key) is None:
                results[key] = DeleteRecordsResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                offsets[key] = partition.offset
    if offsets:
        with broker.stats.delayed_delete_records:  # Kafka's DeleteRecords purgatory
            results.update(await delete_records(broker.replica_manager, offsets,
                                                body.timeout_ms / 1000))
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "low_watermark": results[(topic.name, p.partition_index)].low_watermark,
             "error_code": results[(topic.name, p.partition_index)].error_code}
            for p in topic.partitions]}
        for topic in body.topics]}

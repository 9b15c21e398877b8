"""CreateTopics (key 19). -1 partitions / replication factor (v4+) take the
broker defaults; explicit assignments name the replicas of each partition.
The answer waits (up to the request's timeout_ms) until this broker's
metadata shows a leader for every new partition, as Kafka's does, so a
client may use the topic right away.

v5+ (KIP-525) each result carries the topic's partition count,
replication factor and every config with its source, as DescribeConfigs
would list them, also for validate_only (that is how a client learns the
defaults a topic would get); a principal without DESCRIBE_CONFIGS on the
topic gets no configs and TOPIC_AUTHORIZATION_FAILED in
topic_config_error_code instead. v7 gives the created topic's id (zero
for validate_only and refusals, as Kafka's)."""
from __future__ import annotations

from kcore.handlers.authz import config_refusal, may_create_topic
from kcore.handlers.base import BrokerFacade
from kcore.handlers.configs import describe_topic
from kcore.handlers.topics import create_topic, wait_for_leaders
from kcore.metadata import NO_TOPIC_ID, TopicError, TopicInfo
from kcore.protocol.constants import ConfigResourceType
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

FIRST_WITH_CONFIGS = 5


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    results = []
    created = []
    seen: set[str] = set()
    for topic in body.topics:
        if topic.name in seen:
            results.append(_result(topic.name, ErrorCode.INVALID_REQUEST, "duplicate topic in request"))
            continue
        seen.add(topic.name)
        if not may_create_topic(broker, context, topic.name):
            results.append(_result(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   "CREATE on the cluster or the topic is needed"))
            continue
        result, info = await _create(broker, topic, body.validate_only)
        results.append(result)
        if info is not None and request.api_version >= FIRST_WITH_CONFIGS:
            _describe(broker, context, result, info)
        if info is not None and not body.validate_only:
            result["topic_id"] = info.topic_id
            created.append((result, info))
    for result, info in created:
        if not await wait_for_leaders(broker, info.name, info.num_partitions, body.timeout_ms / 1000):
            result.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                          error_message="the topic was created; its leaders are not elected yet")
    return {"throttle_time_ms": 0, "topics": results}


async def _create(broker, topic, validate_only: bool) -> tuple[dict, TopicInfo | None]:
    num_partitions = topic.num_partitions
    replication_factor = topic.replication_factor
    assignment = None
    if topic.assignments:
        if num_partitions != -1 or replication_factor != -1:
            return _result(topic.name, ErrorCode.INVALID_REQUEST,
                           "give either assignments or partitions/replication factor"), None
        assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
        if sorted(assignment) != list(range(len(assignment))):
            return _result(topic.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "assigned partitions must be 0..n-1"), None
        num_partitions = len(assignment)
        replication_factor = len(next(iter(assignment.values())))
    if num_partitions == -1:
        num_partitions = broker.config["num.partitions"]
    if replication_factor == -1:
        replication_factor = broker.config["default.replication.factor"]
    configs = {c.name: c.value for c in topic.configs}
    try:
        info = await create_topic(broker, topic.name, num_partitions, replication_factor, configs,
                                  assignment, validate_only)
    except TopicError as exc:
        return _result(topic.name, exc.error_code, exc.message), None
    return _result(topic.name, ErrorCode.NONE, None), info


def _describe(broker: BrokerFacade, context, result: dict, info: TopicInfo) -> None:
    """The topic as created (KIP-525): counts, and its configs if the
    principal may describe them."""
    result["num_partitions"] = info.num_partitions
    result["replication_factor"] = info.replication_factor
    refusal = config_refusal(broker, context, AclOperation.DESCRIBE_CONFIGS, ConfigResourceType.TOPIC,
                             info.name)
    if refusal is not None:
        result["topic_config_error_code"] = refusal
        return
    result["configs"] = [{"name": entry["name"], "value": entry["value"], "read_only": entry["read_only"],
                          "config_source": entry["config_source"], "is_sensitive": entry["is_sensitive"]}
                         for entry in describe_topic(broker, info, None, False)]


def _result(name: str, code: int, message: str | None) -> dict:
    return {"name": name, "topic_id": NO_TOPIC_ID, "error_code": code, "error_message": message}

"""KIP-430 authorized operations, asked for by confluent-kafka's
AdminClient (describe_topics / describe_cluster / describe_consumer_groups
with include_authorized_operations: Metadata v8+ and DescribeGroups v3+)
and by exact frames (the INT32_MIN of "not asked", DescribeCluster)."""
from __future__ import annotations

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AclPermissionType, NewTopic, ResourceType

from kcore.protocol.api_keys import ApiKey
from kcore.security.acl import SUPPORTED_OPERATIONS, operations_bit_field, operations_of_bit_field
from kcore.security.acl import AclOperation as KcoreOperation
from kcore.security.acl import ResourceType as KcoreResourceType
from tests.support.acls import ADMIN_TIMEOUT_S, admin_for, grant, secured_broker
from tests.support.wire import WireClient

Op = AclOperation
OMITTED = -2**31
TOPIC_OPS = {Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
             Op.ALTER_CONFIGS}
CLUSTER_OPS = {Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
               Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE}
GROUP_OPS = {Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}


def described(admin, topic: str, group: str) -> tuple[set, set, set]:
    """(topic's, cluster's, group's) operations as confluent-kafka reports them."""
    topics = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(ADMIN_TIMEOUT_S)
    groups = admin.describe_consumer_groups([group], include_authorized_operations=True)
    return (set(topics[topic].result(ADMIN_TIMEOUT_S).authorized_operations),
            set(cluster.authorized_operations),
            set(groups[group].result(ADMIN_TIMEOUT_S).authorized_operations))


def test_without_an_authorizer_every_supported_operation_is_authorized(broker):
    admin = admin_for(broker)
    admin.create_topics([NewTopic("open", 1, 1)])["open"].result(ADMIN_TIMEOUT_S)
    assert described(admin, "open", "any-group") == (TOPIC_OPS, CLUSTER_OPS, GROUP_OPS)


def test_authorized_operations_follow_the_acls(broker_factory):
    broker = secured_broker(broker_factory, ["orders"])  # ANONYMOUS may ALTER the cluster
    admin = admin_for(broker)
    grant(admin, ResourceType.TOPIC, "orders", Op.READ)
    grant(admin, ResourceType.TOPIC, "orders", Op.ALTER_CONFIGS)
    grant(admin, ResourceType.GROUP, "billing", Op.READ)
    topic, cluster, group = described(admin, "orders", "billing")
    # READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS, ALTER
    # (on the cluster) implies DESCRIBE: Kafka's implied operations.
    assert topic == {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert cluster == {Op.ALTER, Op.DESCRIBE}
    assert group == {Op.READ, Op.DESCRIBE}
    grant(admin, ResourceType.TOPIC, "orders", Op.DESCRIBE_CONFIGS, permission=AclPermissionType.DENY)
    assert described(admin, "orders", "billing")[0] == {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS}


def metadata_v8(client: WireClient, topic: str, cluster: bool, topics: bool):
    return client.request(ApiKey.METADATA, 8, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": cluster,
        "include_topic_authorized_operations": topics})


def test_operations_not_asked_for_are_int32_min(broker):
    client = WireClient(broker.port)
    try:
        answer = metadata_v8(client, "absent", cluster=False, topics=False)
        assert answer.cluster_authorized_operations == OMITTED
        assert answer.topics[0].topic_authorized_operations == OMITTED
        asked = metadata_v8(client, "absent", cluster=True, topics=True)
        all_topic_ops = operations_bit_field(SUPPORTED_OPERATIONS[KcoreResourceType.TOPIC])
        assert asked.topics[0].topic_authorized_operations == all_topic_ops
        groups = client.request(ApiKey.DESCRIBE_GROUPS, 3, {"groups": ["g"],
                                                            "include_authorized_operations": False})
        assert groups.groups[0].authorized_operations == OMITTED
        cluster = client.request(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
        assert cluster.cluster_authorized_operations == OMITTED
    finally:
        client.close()


@pytest.mark.parametrize("api", ["Metadata", "DescribeCluster"])
def test_cluster_operations_are_zero_without_describe_on_the_cluster(broker_factory, api):
    """Kafka answers 0, not the other operations, to a principal that may
    not DESCRIBE the cluster."""
    broker = secured_broker(broker_factory, [])
    admin = admin_for(broker)
    grant(admin, ResourceType.BROKER, "kafka-cluster", Op.CREATE)
    client = WireClient(broker.port)
    try:
        def cluster_operations() -> int:
            if api == "Metadata":
                return metadata_v8(client, "absent", cluster=True, topics=False).cluster_authorized_operations
            return client.request(ApiKey.DESCRIBE_CLUSTER, 0, {
                "include_cluster_authorized_operations": True}).cluster_authorized_operations
        allowed = operations_of_bit_field(cluster_operations())
        assert allowed == {KcoreOperation.ALTER, KcoreOperation.DESCRIBE, KcoreOperation.CREATE}
        grant(admin, ResourceType.BROKER, "kafka-cluster", Op.DESCRIBE, permission=AclPermissionType.DENY)
        assert cluster_operations() == 0
    finally:
        client.close()

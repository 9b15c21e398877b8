"""LeaderAndIsr (api key 4): controller to broker, the leader and ISR of partitions; versions 0-5.

The controller sends each broker the state of the partitions it hosts:
leader, leader_epoch, isr, replicas and partition_epoch (the version of the
partition state znode, ``zkVersion`` before Kafka 3.3 renamed it; a leader
that writes the state back compares it), stamped with the controller_epoch.
A request with an older controller_epoch than the newest seen is answered
STALE_CONTROLLER_EPOCH; a partition whose leader_epoch is not newer than
the broker's is skipped with its own error. live_leaders gives the
endpoints of the leaders named, so a new follower can fetch at once.

Versions: v1 is_new (the replica may be created empty); v2 broker_epoch
(KIP-380: a restarted broker ignores requests meant for its previous
incarnation) and partitions grouped by topic (topic_states; v0-1 list them
in ungrouped_partition_states with topic_name in each); v3
adding_replicas and removing_replicas (KIP-455 reassignment); v4 flexible;
v5 each topic's topic_id (KIP-516) and the request's type: 2 (FULL) when
it names every partition the broker hosts, so the broker can set aside
the logs it holds that the request does not name or names under another
topic id (strays), 0 otherwise. Response: error_code and per-partition
errors, each with topic_name (v0-4), grouped by topic_id from v5.
Inter-broker: kcore sends v5 (``api_keys.INTER_BROKER_VERSIONS``).

Schemas: apache/kafka clients/src/main/resources/common/message/
LeaderAndIsrRequest.json and LeaderAndIsrResponse.json as of 3.9.0, the
last release with the ZooKeeper controller (field names: snake_case of the
JSON names).
"""
from kcore.protocol.schema import Field, Message

# LeaderAndIsrPartitionState, a common struct of the spec: ungrouped in v0-1, per topic from v2.
_PARTITION_STATE = [
    Field("topic_name", "string", "0-1"),
    Field("partition_index", "int32", "0+"),
    Field("controller_epoch", "int32", "0+"),
    Field("leader", "int32", "0+"),
    Field("leader_epoch", "int32", "0+"),
    Field("isr", "[]int32", "0+"),
    Field("partition_epoch", "int32", "0+"),
    Field("replicas", "[]int32", "0+"),
    Field("adding_replicas", "[]int32", "3+"),
    Field("removing_replicas", "[]int32", "3+"),
    Field("is_new", "bool", "1+"),
]

REQUEST = Message(
    "LeaderAndIsrRequest", api_key=4, flexible="4+",
    fields=[
        Field("controller_id", "int32", "0+"),
        Field("controller_epoch", "int32", "0+"),
        Field("broker_epoch", "int64", "2+", default=-1),
        Field("type", "int8", "5+"),
        Field("ungrouped_partition_states", "[]LeaderAndIsrPartitionState", "0-1", fields=_PARTITION_STATE),
        Field("topic_states", "[]LeaderAndIsrTopicState", "2+", fields=[
            Field("topic_name", "string", "2+"),
            Field("topic_id", "uuid", "5+"),
            Field("partition_states", "[]LeaderAndIsrPartitionState", "2+", fields=_PARTITION_STATE),
        ]),
        Field("live_leaders", "[]LeaderAndIsrLiveLeader", "0+", fields=[
            Field("broker_id", "int32", "0+"),
            Field("host_name", "string", "0+"),
            Field("port", "int32", "0+"),
        ]),
    ],
)

# LeaderAndIsrPartitionError, a common struct of the spec: ungrouped in v0-4, per topic from v5.
_PARTITION_ERROR = [
    Field("topic_name", "string", "0-4"),
    Field("partition_index", "int32", "0+"),
    Field("error_code", "int16", "0+"),
]

RESPONSE = Message(
    "LeaderAndIsrResponse", api_key=4, flexible="4+",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("partition_errors", "[]LeaderAndIsrPartitionError", "0-4", fields=_PARTITION_ERROR),
        Field("topics", "[]LeaderAndIsrTopicError", "5+", fields=[
            Field("topic_id", "uuid", "5+"),
            Field("partition_errors", "[]LeaderAndIsrPartitionError", "5+", fields=_PARTITION_ERROR),
        ]),
    ],
)

LeaderAndIsrRequest = REQUEST.data_class
LeaderAndIsrResponse = RESPONSE.data_class

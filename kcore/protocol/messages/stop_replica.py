"""StopReplica (api key 5): controller to broker, stop fetching (and maybe delete) replicas; versions 0-3.

Sent when a replica leaves a broker (reassignment, topic deletion) or a
broker shuts down. A request with an older controller_epoch than the
newest seen is answered STALE_CONTROLLER_EPOCH.

Versions: v1 broker_epoch (KIP-380) and partitions grouped by topic
(topics; v0 lists ungrouped_partitions); v2 flexible; v3 (KIP-570)
replaces the request-wide delete_partitions with topic_states carrying a
per-partition leader_epoch and delete_partition; a partition whose
leader_epoch is older than the broker's is answered FENCED_LEADER_EPOCH.
leader_epoch -1 skips the check and -2 means the topic is being deleted
(Kafka's LeaderAndIsr.NoEpoch and EpochDuringDelete).
Inter-broker: kcore sends v3 (``api_keys.INTER_BROKER_VERSIONS``).

Schemas: apache/kafka clients/src/main/resources/common/message/
StopReplicaRequest.json and StopReplicaResponse.json as of 3.9.0 (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "StopReplicaRequest", api_key=5, flexible="2+",
    fields=[
        Field("controller_id", "int32", "0+"),
        Field("controller_epoch", "int32", "0+"),
        Field("broker_epoch", "int64", "1+", default=-1),
        Field("delete_partitions", "bool", "0-2"),
        Field("ungrouped_partitions", "[]StopReplicaPartitionV0", "0", fields=[
            Field("topic_name", "string", "0"),
            Field("partition_index", "int32", "0"),
        ]),
        Field("topics", "[]StopReplicaTopicV1", "1-2", fields=[
            Field("name", "string", "1-2"),
            Field("partition_indexes", "[]int32", "1-2"),
        ]),
        Field("topic_states", "[]StopReplicaTopicState", "3+", fields=[
            Field("topic_name", "string", "3+"),
            Field("partition_states", "[]StopReplicaPartitionState", "3+", fields=[
                Field("partition_index", "int32", "3+"),
                Field("leader_epoch", "int32", "3+", default=-1),
                Field("delete_partition", "bool", "3+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "StopReplicaResponse", api_key=5, flexible="2+",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("partition_errors", "[]StopReplicaPartitionError", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("partition_index", "int32", "0+"),
            Field("error_code", "int16", "0+"),
        ]),
    ],
)

StopReplicaRequest = REQUEST.data_class
StopReplicaResponse = RESPONSE.data_class

"""UpdateMetadata (api key 6): controller to every broker, the metadata cache; versions 0-7.

Carries the live brokers with their endpoints and the state of partitions
(leader, leader_epoch, isr, replicas, offline_replicas), which each broker
serves from its metadata cache to Metadata requests. A request with an
older controller_epoch than the newest seen is answered
STALE_CONTROLLER_EPOCH. The partition state's zk_version is the same
number LeaderAndIsr calls partition_epoch (Kafka renamed it only there).

Versions: v1 several endpoints per broker (endpoints; v0 one v0_host and
v0_port); v2 rack; v3 listener name per endpoint; v4 offline_replicas;
v5 broker_epoch (KIP-380) and partitions grouped by topic (topic_states;
v0-4 list ungrouped_partition_states with topic_name in each); v6
flexible; v7 each topic's topic_id (KIP-516). Response: error_code only.
Inter-broker: kcore sends v7 (``api_keys.INTER_BROKER_VERSIONS``).

Schemas: apache/kafka clients/src/main/resources/common/message/
UpdateMetadataRequest.json and UpdateMetadataResponse.json as of 3.9.0
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

# UpdateMetadataPartitionState, a common struct of the spec: ungrouped in v0-4, per topic from v5.
_PARTITION_STATE = [
    Field("topic_name", "string", "0-4"),
    Field("partition_index", "int32", "0+"),
    Field("controller_epoch", "int32", "0+"),
    Field("leader", "int32", "0+"),
    Field("leader_epoch", "int32", "0+"),
    Field("isr", "[]int32", "0+"),
    Field("zk_version", "int32", "0+"),
    Field("replicas", "[]int32", "0+"),
    Field("offline_replicas", "[]int32", "4+"),
]

REQUEST = Message(
    "UpdateMetadataRequest", api_key=6, flexible="6+",
    fields=[
        Field("controller_id", "int32", "0+"),
        Field("controller_epoch", "int32", "0+"),
        Field("broker_epoch", "int64", "5+", default=-1),
        Field("ungrouped_partition_states", "[]UpdateMetadataPartitionState", "0-4", fields=_PARTITION_STATE),
        Field("topic_states", "[]UpdateMetadataTopicState", "5+", fields=[
            Field("topic_name", "string", "5+"),
            Field("topic_id", "uuid", "7+"),
            Field("partition_states", "[]UpdateMetadataPartitionState", "5+", fields=_PARTITION_STATE),
        ]),
        Field("live_brokers", "[]UpdateMetadataBroker", "0+", fields=[
            Field("id", "int32", "0+"),
            Field("v0_host", "string", "0"),
            Field("v0_port", "int32", "0"),
            Field("endpoints", "[]UpdateMetadataEndpoint", "1+", fields=[
                Field("port", "int32", "1+"),
                Field("host", "string", "1+"),
                Field("listener", "string", "3+"),
                Field("security_protocol", "int16", "1+"),
            ]),
            Field("rack", "string", "2+", nullable="0+"),
        ]),
    ],
)

RESPONSE = Message(
    "UpdateMetadataResponse", api_key=6, flexible="6+",
    fields=[
        Field("error_code", "int16", "0+"),
    ],
)

UpdateMetadataRequest = REQUEST.data_class
UpdateMetadataResponse = RESPONSE.data_class

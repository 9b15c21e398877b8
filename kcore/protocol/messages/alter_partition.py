"""AlterPartition (api key 56): leader to controller, change a partition's ISR (KIP-497); versions 0-1.

A leader that shrinks or expands the ISR asks the controller to write it,
so the controller stays the only writer of partition state. The leader
sends the partition_epoch it last received (LeaderAndIsr's partition_epoch,
the zkVersion of the state znode); the controller refuses a stale one
(INVALID_UPDATE_VERSION) or a stale leader_epoch (FENCED_LEADER_EPOCH),
and answers with the state it committed, its new partition_epoch included.
Until the answer, the leader keeps the larger of the old and proposed ISR
for its high watermark (KIP-497).

Flexible from v0 (the API was added as AlterIsr in Kafka 2.7 and renamed in
3.2). v1 leader_recovery_state (KIP-704: 1 while a partition recovers from
an unclean election, 0 otherwise) in the request and the response.
Inter-broker: kcore sends v1 (``api_keys.INTER_BROKER_VERSIONS``).

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterPartitionRequest.json and AlterPartitionResponse.json as of 3.9.0
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterPartitionRequest", api_key=56, flexible="0+",
    fields=[
        Field("broker_id", "int32", "0+"),
        Field("broker_epoch", "int64", "0+", default=-1),
        Field("topics", "[]TopicData", "0+", fields=[
            Field("topic_name", "string", "0-1"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
                Field("new_isr", "[]int32", "0-2"),
                Field("leader_recovery_state", "int8", "1+"),
                Field("partition_epoch", "int32", "0+"),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "AlterPartitionResponse", api_key=56, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("topics", "[]TopicData", "0+", fields=[
            Field("topic_name", "string", "0-1"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("leader_id", "int32", "0+"),
                Field("leader_epoch", "int32", "0+"),
                Field("isr", "[]int32", "0+"),
                Field("leader_recovery_state", "int8", "1+"),
                Field("partition_epoch", "int32", "0+"),
            ]),
        ]),
    ],
)

AlterPartitionRequest = REQUEST.data_class
AlterPartitionResponse = RESPONSE.data_class

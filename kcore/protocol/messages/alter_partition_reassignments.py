"""AlterPartitionReassignments (api key 45, KIP-455): move partitions'
replicas to other brokers, or cancel a move; versions 0-1 (flexible).

Admin clients send it to the controller (kafka-reassign-partitions.sh,
Java's Admin.alterPartitionReassignments); any kcore broker takes it and
passes it on. A null ``replicas`` cancels the partition's reassignment
in progress (NO_REASSIGNMENT_IN_PROGRESS when there is none).

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterPartitionReassignmentsRequest.json and ...Response.json (field
names: snake_case of the JSON names). v1 (KIP-860) adds
allow_replication_factor_change: false refuses a move that changes the
partition's replica count with INVALID_REPLICATION_FACTOR; the response
echoes it.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterPartitionReassignmentsRequest", api_key=45, flexible="0+",
    fields=[
        Field("timeout_ms", "int32", "0+", default=60000),
        Field("allow_replication_factor_change", "bool", "1+", default=True),
        Field("topics", "[]ReassignableTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]ReassignablePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("replicas", "[]int32", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "AlterPartitionReassignmentsResponse", api_key=45, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("allow_replication_factor_change", "bool", "1+", default=True),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+"),
        Field("responses", "[]ReassignableTopicResponse", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]ReassignablePartitionResponse", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

AlterPartitionReassignmentsRequest = REQUEST.data_class
AlterPartitionReassignmentsResponse = RESPONSE.data_class

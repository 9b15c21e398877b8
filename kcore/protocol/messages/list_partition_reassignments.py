"""ListPartitionReassignments (api key 46, KIP-455): the reassignments in
progress, with each partition's full replica set and the replicas being
added and removed; version 0 (flexible).

A null ``topics`` lists every reassignment; named partitions that are not
being reassigned are left out of the answer, as Kafka does.

Schemas: apache/kafka clients/src/main/resources/common/message/
ListPartitionReassignmentsRequest.json and ...Response.json.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ListPartitionReassignmentsRequest", api_key=46, flexible="0+",
    fields=[
        Field("timeout_ms", "int32", "0+", default=60000),
        Field("topics", "[]ListPartitionReassignmentsTopics", "0+", nullable="0+", default=None,
              fields=[
                  Field("name", "string", "0+"),
                  Field("partition_indexes", "[]int32", "0+"),
              ]),
    ],
)

RESPONSE = Message(
    "ListPartitionReassignmentsResponse", api_key=46, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+"),
        Field("topics", "[]OngoingTopicReassignment", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OngoingPartitionReassignment", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("replicas", "[]int32", "0+"),
                Field("adding_replicas", "[]int32", "0+"),
                Field("removing_replicas", "[]int32", "0+"),
            ]),
        ]),
    ],
)

ListPartitionReassignmentsRequest = REQUEST.data_class
ListPartitionReassignmentsResponse = RESPONSE.data_class

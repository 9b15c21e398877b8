"""OffsetFetch (api key 9): read a group's committed offsets; versions 1-9.

Versions: v1 offsets kept by the broker (not ZooKeeper); v2 null topics
means every partition with a committed offset, top-level error_code; v3
throttle_time_ms; v4 throttles after answering; v5 committed_leader_epoch;
v6 flexible; v7 require_stable (KIP-447): a partition with a
transactional offset commit still pending answers UNSTABLE_OFFSET_COMMIT
and the client asks again, so a consumer taking it over never starts
from the offset before a commit that is about to land; v8 several groups
per request, each answered with its own error; v9 member_id and
member_epoch, which a consumer-protocol member sends and the coordinator
checks (KIP-848).

Schemas: apache/kafka clients/src/main/resources/common/message/
OffsetFetchRequest.json and OffsetFetchResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "OffsetFetchRequest", api_key=9, flexible="6+",
    fields=[
        Field("group_id", "string", "0-7"),
        Field("topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
            Field("name", "string", "0-7"),
            Field("partition_indexes", "[]int32", "0-7"),
        ]),
        Field("groups", "[]OffsetFetchRequestGroup", "8+", fields=[
            Field("group_id", "string", "8+"),
            Field("member_id", "string", "9+", nullable="9+", default=None),
            Field("member_epoch", "int32", "9+", default=-1),
            Field("topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
                Field("name", "string", "8+"),
                Field("partition_indexes", "[]int32", "8+"),
            ]),
        ]),
        Field("require_stable", "bool", "7+", default=False),
    ],
)

RESPONSE = Message(
    "OffsetFetchResponse", api_key=9, flexible="6+",
    fields=[
        Field("throttle_time_ms", "int32", "3+"),
        Field("topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
            Field("name", "string", "0-7"),
            Field("partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
                Field("partition_index", "int32", "0-7"),
                Field("committed_offset", "int64", "0-7"),
                Field("committed_leader_epoch", "int32", "5-7", default=-1),
                Field("metadata", "string", "0-7", nullable="0-7"),
                Field("error_code", "int16", "0-7"),
            ]),
        ]),
        Field("error_code", "int16", "2-7"),
        Field("groups", "[]OffsetFetchResponseGroup", "8+", fields=[
            Field("group_id", "string", "8+"),
            Field("topics", "[]OffsetFetchResponseTopics", "8+", fields=[
                Field("name", "string", "8+"),
                Field("partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                    Field("partition_index", "int32", "8+"),
                    Field("committed_offset", "int64", "8+"),
                    Field("committed_leader_epoch", "int32", "8+", default=-1),
                    Field("metadata", "string", "8+", nullable="8+"),
                    Field("error_code", "int16", "8+"),
                ]),
            ]),
            Field("error_code", "int16", "8+"),
        ]),
    ],
)

OffsetFetchRequest = REQUEST.data_class
OffsetFetchResponse = RESPONSE.data_class

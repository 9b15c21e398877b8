"""OffsetFetch (api key 9): read a group's committed offsets; versions 1-7.

Versions: v1 offsets kept by the broker (not ZooKeeper); v2 null topics
means every partition with a committed offset, top-level error_code; v3
throttle_time_ms; v4 throttles after answering; v5 committed_leader_epoch;
v6 flexible; v7 require_stable (KIP-447): a partition with a
transactional offset commit still pending answers UNSTABLE_OFFSET_COMMIT
and the client asks again, so a consumer taking it over never starts
from the offset before a commit that is about to land.

Schemas: apache/kafka clients/src/main/resources/common/message/
OffsetFetchRequest.json and OffsetFetchResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "OffsetFetchRequest", api_key=9, flexible="6+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("topics", "[]OffsetFetchRequestTopic", "0+", nullable="2+", fields=[
            Field("name", "string", "0+"),
            Field("partition_indexes", "[]int32", "0+"),
        ]),
        Field("require_stable", "bool", "7+", default=False),
    ],
)

RESPONSE = Message(
    "OffsetFetchResponse", api_key=9, flexible="6+",
    fields=[
        Field("throttle_time_ms", "int32", "3+"),
        Field("topics", "[]OffsetFetchResponseTopic", "0+", fields=[
            Field("name", "string", "0+"),
            Field("partitions", "[]OffsetFetchResponsePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("committed_offset", "int64", "0+"),
                Field("committed_leader_epoch", "int32", "5+", default=-1),
                Field("metadata", "string", "0+", nullable="0+"),
                Field("error_code", "int16", "0+"),
            ]),
        ]),
        Field("error_code", "int16", "2+"),
    ],
)

OffsetFetchRequest = REQUEST.data_class
OffsetFetchResponse = RESPONSE.data_class

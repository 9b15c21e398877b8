"""ConsumerGroupHeartbeat (api key 68): a member of a consumer-protocol group
(KIP-848) joins, heartbeats and leaves; versions 0-1.

Every version is flexible. Fields marked "null if unchanged" may be left out
after the first heartbeat; member_epoch 0 joins, -1 leaves, -2 tells the
coordinator a static member will come back. v1 adds subscribed_topic_regex
and requires the member id from the client (KIP-1082). The assignment goes
by topic id, never by name.

Schemas: apache/kafka clients/src/main/resources/common/message/
ConsumerGroupHeartbeatRequest.json and ConsumerGroupHeartbeatResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ConsumerGroupHeartbeatRequest", api_key=68, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("member_id", "string", "0+"),
        Field("member_epoch", "int32", "0+"),
        Field("instance_id", "string", "0+", nullable="0+", default=None),
        Field("rack_id", "string", "0+", nullable="0+", default=None),
        Field("rebalance_timeout_ms", "int32", "0+", default=-1),
        Field("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
        Field("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
        Field("server_assignor", "string", "0+", nullable="0+", default=None),
        Field("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "ConsumerGroupHeartbeatResponse", api_key=68, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("member_id", "string", "0+", nullable="0+", default=None),
        Field("member_epoch", "int32", "0+"),
        Field("heartbeat_interval_ms", "int32", "0+"),
        Field("assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
            Field("topic_partitions", "[]TopicPartitions", "0+", fields=[
                Field("topic_id", "uuid", "0+"),
                Field("partitions", "[]int32", "0+"),
            ]),
        ]),
    ],
)

ConsumerGroupHeartbeatRequest = REQUEST.data_class
ConsumerGroupHeartbeatResponse = RESPONSE.data_class

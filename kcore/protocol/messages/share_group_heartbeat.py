"""ShareGroupHeartbeat (api key 76): join, stay in and leave a share group (KIP-932); version 1.

Version 0 was Kafka 4.0's early access and is gone since 4.1; v1 is the
stable one Kafka 4.2 serves (librdkafka 2.16 sends only v1). The member id
is chosen by the client (a UUID); member_epoch 0 joins, -1 leaves. The
assignment names topics by id.

Schemas: apache/kafka clients/src/main/resources/common/message/
ShareGroupHeartbeatRequest.json and ShareGroupHeartbeatResponse.json (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ShareGroupHeartbeatRequest", api_key=76, flexible="0+",
    fields=[
        Field("group_id", "string", "0+"),
        Field("member_id", "string", "0+"),
        Field("member_epoch", "int32", "0+"),
        Field("rack_id", "string", "0+", nullable="0+", default=None),
        Field("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    ],
)

RESPONSE = Message(
    "ShareGroupHeartbeatResponse", api_key=76, flexible="0+",
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

ShareGroupHeartbeatRequest = REQUEST.data_class
ShareGroupHeartbeatResponse = RESPONSE.data_class

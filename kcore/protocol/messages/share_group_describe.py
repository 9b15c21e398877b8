"""ShareGroupDescribe (api key 77): members and assignments of share groups (KIP-932); version 1.

Version 0 was Kafka 4.0's early access; v1 is the stable version of Kafka
4.1 and 4.2 (TOPIC_AUTHORIZATION_FAILED may answer a group whose topics
the principal may not describe).

Schemas: apache/kafka clients/src/main/resources/common/message/
ShareGroupDescribeRequest.json and ShareGroupDescribeResponse.json (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ShareGroupDescribeRequest", api_key=77, flexible="0+",
    fields=[
        Field("group_ids", "[]string", "0+"),
        Field("include_authorized_operations", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "ShareGroupDescribeResponse", api_key=77, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("groups", "[]DescribedGroup", "0+", fields=[
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+", default=None),
            Field("group_id", "string", "0+"),
            Field("group_state", "string", "0+"),
            Field("group_epoch", "int32", "0+"),
            Field("assignment_epoch", "int32", "0+"),
            Field("assignor_name", "string", "0+"),
            Field("members", "[]Member", "0+", fields=[
                Field("member_id", "string", "0+"),
                Field("rack_id", "string", "0+", nullable="0+", default=None),
                Field("member_epoch", "int32", "0+"),
                Field("client_id", "string", "0+"),
                Field("client_host", "string", "0+"),
                Field("subscribed_topic_names", "[]string", "0+"),
                Field("assignment", "Assignment", "0+", fields=[
                    Field("topic_partitions", "[]TopicPartitions", "0+", fields=[
                        Field("topic_id", "uuid", "0+"),
                        Field("topic_name", "string", "0+"),
                        Field("partitions", "[]int32", "0+"),
                    ]),
                ]),
            ]),
            Field("authorized_operations", "int32", "0+", default=-0x80000000),
        ]),
    ],
)

ShareGroupDescribeRequest = REQUEST.data_class
ShareGroupDescribeResponse = RESPONSE.data_class

"""ConsumerGroupDescribe (api key 69): state, epochs, assignor and members
of consumer-protocol groups (KIP-848); versions 0-1.

Every version is flexible. Each member comes with its current assignment
and its target assignment (topic id and name). v1 adds member_type
(KIP-1099): 0 for a member that speaks the classic protocol inside a
consumer group, 1 for a consumer-protocol member, -1 unknown.

Schemas: apache/kafka clients/src/main/resources/common/message/
ConsumerGroupDescribeRequest.json and ConsumerGroupDescribeResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message


def _assignment(name: str) -> Field:
    return Field(name, "Assignment", "0+", fields=[
        Field("topic_partitions", "[]TopicPartitions", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("topic_name", "string", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
    ])


REQUEST = Message(
    "ConsumerGroupDescribeRequest", api_key=69, flexible="0+",
    fields=[
        Field("group_ids", "[]string", "0+"),
        Field("include_authorized_operations", "bool", "0+"),
    ],
)

RESPONSE = Message(
    "ConsumerGroupDescribeResponse", api_key=69, flexible="0+",
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
                Field("instance_id", "string", "0+", nullable="0+", default=None),
                Field("rack_id", "string", "0+", nullable="0+", default=None),
                Field("member_epoch", "int32", "0+"),
                Field("client_id", "string", "0+"),
                Field("client_host", "string", "0+"),
                Field("subscribed_topic_names", "[]string", "0+"),
                Field("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
                _assignment("assignment"),
                _assignment("target_assignment"),
                Field("member_type", "int8", "1+", default=-1),
            ]),
            Field("authorized_operations", "int32", "0+", default=-0x80000000),
        ]),
    ],
)

ConsumerGroupDescribeRequest = REQUEST.data_class
ConsumerGroupDescribeResponse = RESPONSE.data_class

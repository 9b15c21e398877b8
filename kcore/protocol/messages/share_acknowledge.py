"""ShareAcknowledge (api key 79): acknowledge acquired records without fetching (KIP-932); versions 1-2.

Version 0 was Kafka 4.0's early access, removed in 4.1; v1 is the stable
version; v2 (Kafka 4.2, KIP-1222) adds the renew flag to the request and
the acquisition lock timeout to the response. Acknowledge types: 0 gap,
1 accept, 2 release, 3 reject, 4 renew (v2).

Schemas: apache/kafka clients/src/main/resources/common/message/
ShareAcknowledgeRequest.json and ShareAcknowledgeResponse.json (field
names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ShareAcknowledgeRequest", api_key=79, flexible="0+",
    fields=[
        Field("group_id", "string", "0+", nullable="0+", default=None),
        Field("member_id", "string", "0+", nullable="0+"),
        Field("share_session_epoch", "int32", "0+"),
        Field("is_renew_ack", "bool", "2+", default=False),
        Field("topics", "[]AcknowledgeTopic", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]AcknowledgePartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("acknowledgement_batches", "[]AcknowledgementBatch", "0+", fields=[
                    Field("first_offset", "int64", "0+"),
                    Field("last_offset", "int64", "0+"),
                    Field("acknowledge_types", "[]int8", "0+"),
                ]),
            ]),
        ]),
    ],
)

RESPONSE = Message(
    "ShareAcknowledgeResponse", api_key=79, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", "int32", "2+"),
        Field("responses", "[]ShareAcknowledgeTopicResponse", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
                Field("current_leader", "LeaderIdAndEpoch", "0+", fields=[
                    Field("leader_id", "int32", "0+"),
                    Field("leader_epoch", "int32", "0+"),
                ]),
            ]),
        ]),
        Field("node_endpoints", "[]NodeEndpoint", "0+", fields=[
            Field("node_id", "int32", "0+"),
            Field("host", "string", "0+"),
            Field("port", "int32", "0+"),
            Field("rack", "string", "0+", nullable="0+", default=None),
        ]),
    ],
)

ShareAcknowledgeRequest = REQUEST.data_class
ShareAcknowledgeResponse = RESPONSE.data_class

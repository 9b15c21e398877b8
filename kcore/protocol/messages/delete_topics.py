"""DeleteTopics (api key 20): delete topics; versions 1-6.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3 may answer
TOPIC_DELETION_DISABLED; v4 flexible; v5 error_message, and may answer
THROTTLING_QUOTA_EXCEEDED (KIP-599); v6 topics named by name or by
topic_id (KIP-516), each result with the topic's id and a name that is
null for an id nobody may see.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteTopicsRequest.json and DeleteTopicsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteTopicsRequest", api_key=20, flexible="4+",
    fields=[
        Field("topics", "[]DeleteTopicState", "6+", fields=[
            Field("name", "string", "6+", nullable="6+", default=None),
            Field("topic_id", "uuid", "6+"),
        ]),
        Field("topic_names", "[]string", "0-5"),
        Field("timeout_ms", "int32", "0+"),
    ],
)

RESPONSE = Message(
    "DeleteTopicsResponse", api_key=20, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("responses", "[]DeletableTopicResult", "0+", fields=[
            Field("name", "string", "0+", nullable="6+"),
            Field("topic_id", "uuid", "6+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "5+", nullable="5+", default=None),
        ]),
    ],
)

DeleteTopicsRequest = REQUEST.data_class
DeleteTopicsResponse = RESPONSE.data_class

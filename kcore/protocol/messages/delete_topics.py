"""DeleteTopics (api key 20): delete topics; versions 1-3.

Versions: v1 throttle_time_ms; v2 throttles after answering; v3 may answer
TOPIC_DELETION_DISABLED.

Schemas: apache/kafka clients/src/main/resources/common/message/
DeleteTopicsRequest.json and DeleteTopicsResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DeleteTopicsRequest", api_key=20, flexible="4+",
    fields=[
        Field("topic_names", "[]string", "0+"),
        Field("timeout_ms", "int32", "0+"),
    ],
)

RESPONSE = Message(
    "DeleteTopicsResponse", api_key=20, flexible="4+",
    fields=[
        Field("throttle_time_ms", "int32", "1+"),
        Field("responses", "[]DeletableTopicResult", "0+", fields=[
            Field("name", "string", "0+"),
            Field("error_code", "int16", "0+"),
        ]),
    ],
)

DeleteTopicsRequest = REQUEST.data_class
DeleteTopicsResponse = RESPONSE.data_class

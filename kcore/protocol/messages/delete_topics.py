"""DeleteTopics (api key 20), versions 1-3.

Source: apache/kafka clients/src/main/resources/common/message/DeleteTopicsRequest.json
and DeleteTopicsResponse.json.
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

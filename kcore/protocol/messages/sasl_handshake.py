"""SaslHandshake (api key 17), versions 0-1.

Source: apache/kafka clients/src/main/resources/common/message/SaslHandshakeRequest.json
and SaslHandshakeResponse.json.
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "SaslHandshakeRequest", api_key=17, flexible="none",
    fields=[
        Field("mechanism", "string", "0+"),
    ],
)

RESPONSE = Message(
    "SaslHandshakeResponse", api_key=17, flexible="none",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("mechanisms", "[]string", "0+"),
    ],
)

SaslHandshakeRequest = REQUEST.data_class
SaslHandshakeResponse = RESPONSE.data_class

"""SaslHandshake (api key 17): choose a SASL mechanism; versions 0-1.

Versions: v0 raw SASL tokens follow on the connection; v1 tokens travel in
SaslAuthenticate requests (KIP-152). Never flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
SaslHandshakeRequest.json and SaslHandshakeResponse.json (field names: snake_case of
the JSON names).
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

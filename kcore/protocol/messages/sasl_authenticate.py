"""SaslAuthenticate (api key 36): one SASL token exchange; versions 0-2.

Versions: v1 session_lifetime_ms (KIP-368); v2 flexible.

Schemas: apache/kafka clients/src/main/resources/common/message/
SaslAuthenticateRequest.json and SaslAuthenticateResponse.json (field names: snake_case of
the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "SaslAuthenticateRequest", api_key=36, flexible="2+",
    fields=[
        Field("auth_bytes", "bytes", "0+"),
    ],
)

RESPONSE = Message(
    "SaslAuthenticateResponse", api_key=36, flexible="2+",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+"),
        Field("auth_bytes", "bytes", "0+"),
        Field("session_lifetime_ms", "int64", "1+"),
    ],
)

SaslAuthenticateRequest = REQUEST.data_class
SaslAuthenticateResponse = RESPONSE.data_class

"""DescribeUserScramCredentials (api key 50): each user's SCRAM mechanisms
and iteration counts, never the salts or keys (KIP-554); version 0,
flexible. Null or empty ``users`` describes every user.

Schemas: apache/kafka clients/src/main/resources/common/message/
DescribeUserScramCredentialsRequest.json and DescribeUserScramCredentialsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "DescribeUserScramCredentialsRequest", api_key=50, flexible="0+",
    fields=[
        Field("users", "[]UserName", "0+", nullable="0+", fields=[
            Field("name", "string", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "DescribeUserScramCredentialsResponse", api_key=50, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("results", "[]DescribeUserScramCredentialsResult", "0+", fields=[
            Field("user", "string", "0+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+", default=None),
            Field("credential_infos", "[]CredentialInfo", "0+", fields=[
                Field("mechanism", "int8", "0+"),
                Field("iterations", "int32", "0+"),
            ]),
        ]),
    ],
)

DescribeUserScramCredentialsRequest = REQUEST.data_class
DescribeUserScramCredentialsResponse = RESPONSE.data_class

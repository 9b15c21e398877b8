"""AlterUserScramCredentials (api key 51): add, replace or delete SCRAM
credentials (KIP-554); version 0, flexible. The client sends the salted
password (PBKDF2 of the password), never the password.

Schemas: apache/kafka clients/src/main/resources/common/message/
AlterUserScramCredentialsRequest.json and AlterUserScramCredentialsResponse.json
(field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "AlterUserScramCredentialsRequest", api_key=51, flexible="0+",
    fields=[
        Field("deletions", "[]ScramCredentialDeletion", "0+", fields=[
            Field("name", "string", "0+"),
            Field("mechanism", "int8", "0+"),
        ]),
        Field("upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
            Field("name", "string", "0+"),
            Field("mechanism", "int8", "0+"),
            Field("iterations", "int32", "0+"),
            Field("salt", "bytes", "0+"),
            Field("salted_password", "bytes", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "AlterUserScramCredentialsResponse", api_key=51, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("results", "[]AlterUserScramCredentialsResult", "0+", fields=[
            Field("user", "string", "0+"),
            Field("error_code", "int16", "0+"),
            Field("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ],
)

AlterUserScramCredentialsRequest = REQUEST.data_class
AlterUserScramCredentialsResponse = RESPONSE.data_class

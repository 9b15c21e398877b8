"""ControlledShutdown (api key 7): broker to controller, move leadership off before stopping; versions 0-3.

A broker about to stop asks the controller to elect other leaders for the
partitions it leads; the response lists the partitions it still leads
(remaining_partitions), and the broker retries until none remain or its
retries run out.

Versions: v0 is sent with request header v0 (no client id; see
``header.request_header_version``); v1 same body with the usual header;
v2 broker_epoch (KIP-380: the controller ignores a request from an earlier
incarnation of the broker); v3 flexible.
Inter-broker: kcore sends v3 (``api_keys.INTER_BROKER_VERSIONS``).

Schemas: apache/kafka clients/src/main/resources/common/message/
ControlledShutdownRequest.json and ControlledShutdownResponse.json as of
3.9.0 (field names: snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ControlledShutdownRequest", api_key=7, flexible="3+",
    fields=[
        Field("broker_id", "int32", "0+"),
        Field("broker_epoch", "int64", "2+", default=-1),
    ],
)

RESPONSE = Message(
    "ControlledShutdownResponse", api_key=7, flexible="3+",
    fields=[
        Field("error_code", "int16", "0+"),
        Field("remaining_partitions", "[]RemainingPartition", "0+", fields=[
            Field("topic_name", "string", "0+"),
            Field("partition_index", "int32", "0+"),
        ]),
    ],
)

ControlledShutdownRequest = REQUEST.data_class
ControlledShutdownResponse = RESPONSE.data_class

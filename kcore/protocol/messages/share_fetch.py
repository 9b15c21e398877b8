"""ShareFetch (api key 78): acquire records of a share group, with acknowledgements (KIP-932); versions 1-2.

Version 0 was Kafka 4.0's early access, removed in 4.1. v1 is the stable
version (max_records and batch_size, no per-partition byte limit; the
response gives the acquisition lock timeout). v2, Kafka 4.2, adds the
acquire mode (KIP-1206: 0 batch-optimized, 1 record-limit) and the renew
flag (KIP-1222: RENEW acknowledgements, type 4, extend a lock without
fetching). Topics are named by id. Records come as whole batches; the
client keeps only the offsets in ``acquired_records``.

Schemas: apache/kafka clients/src/main/resources/common/message/
ShareFetchRequest.json and ShareFetchResponse.json (field names: snake_case
of the JSON names).
"""
from kcore.protocol.schema import Field, Message

_ACKNOWLEDGEMENT_BATCH = [
    Field("first_offset", "int64", "0+"),
    Field("last_offset", "int64", "0+"),
    Field("acknowledge_types", "[]int8", "0+"),
]

REQUEST = Message(
    "ShareFetchRequest", api_key=78, flexible="0+",
    fields=[
        Field("group_id", "string", "0+", nullable="0+", default=None),
        Field("member_id", "string", "0+", nullable="0+"),
        Field("share_session_epoch", "int32", "0+"),
        Field("max_wait_ms", "int32", "0+"),
        Field("min_bytes", "int32", "0+"),
        Field("max_bytes", "int32", "0+", default=0x7FFFFFFF),
        Field("max_records", "int32", "1+"),
        Field("batch_size", "int32", "1+"),
        Field("share_acquire_mode", "int8", "2+"),
        Field("is_renew_ack", "bool", "2+"),
        Field("topics", "[]FetchTopic", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]FetchPartition", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("partition_max_bytes", "int32", "0"),
                Field("acknowledgement_batches", "[]AcknowledgementBatch", "0+",
                      fields=_ACKNOWLEDGEMENT_BATCH),
            ]),
        ]),
        Field("forgotten_topics_data", "[]ForgottenTopic", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
    ],
)

RESPONSE = Message(
    "ShareFetchResponse", api_key=78, flexible="0+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "0+"),
        Field("error_message", "string", "0+", nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", "int32", "1+"),
        Field("responses", "[]ShareFetchableTopicResponse", "0+", fields=[
            Field("topic_id", "uuid", "0+"),
            Field("partitions", "[]PartitionData", "0+", fields=[
                Field("partition_index", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+", default=None),
                Field("acknowledge_error_code", "int16", "0+"),
                Field("acknowledge_error_message", "string", "0+", nullable="0+", default=None),
                Field("current_leader", "LeaderIdAndEpoch", "0+", fields=[
                    Field("leader_id", "int32", "0+"),
                    Field("leader_epoch", "int32", "0+"),
                ]),
                Field("records", "records", "0+", nullable="0+"),
                Field("acquired_records", "[]AcquiredRecords", "0+", fields=[
                    Field("first_offset", "int64", "0+"),
                    Field("last_offset", "int64", "0+"),
                    Field("delivery_count", "int16", "0+"),
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

ShareFetchRequest = REQUEST.data_class
ShareFetchResponse = RESPONSE.data_class

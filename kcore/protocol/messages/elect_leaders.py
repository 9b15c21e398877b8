"""ElectLeaders (api key 43): elect preferred (or any live) replicas as leaders; versions 0-2.

Admin clients send it to the controller (kafka-leader-election.sh,
confluent-kafka's AdminClient.elect_leaders over librdkafka, kafka-python's
KafkaAdminClient.elect_leaders); a broker that is not the controller answers
NOT_CONTROLLER. A null topic_partitions means every partition (so null
must be given explicitly; the default is an empty list).

Versions: v0 was ElectPreferredLeaders (Kafka 2.2, KIP-183); v1
election_type (0 preferred replica, 1 unclean: any live replica when none
is in sync; KIP-460) and the top-level error_code in the response; v2
flexible. Per-partition results carry error_code and error_message (null
when none).

Schemas: apache/kafka clients/src/main/resources/common/message/
ElectLeadersRequest.json and ElectLeadersResponse.json (field names:
snake_case of the JSON names).
"""
from kcore.protocol.schema import Field, Message

REQUEST = Message(
    "ElectLeadersRequest", api_key=43, flexible="2+",
    fields=[
        Field("election_type", "int8", "1+"),
        Field("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", fields=[
            Field("topic", "string", "0+"),
            Field("partitions", "[]int32", "0+"),
        ]),
        Field("timeout_ms", "int32", "0+", default=60000),
    ],
)

RESPONSE = Message(
    "ElectLeadersResponse", api_key=43, flexible="2+",
    fields=[
        Field("throttle_time_ms", "int32", "0+"),
        Field("error_code", "int16", "1+"),
        Field("replica_election_results", "[]ReplicaElectionResult", "0+", fields=[
            Field("topic", "string", "0+"),
            Field("partition_result", "[]PartitionResult", "0+", fields=[
                Field("partition_id", "int32", "0+"),
                Field("error_code", "int16", "0+"),
                Field("error_message", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

ElectLeadersRequest = REQUEST.data_class
ElectLeadersResponse = RESPONSE.data_class

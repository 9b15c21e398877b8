"""`kcore topics describe` text: kafka-topics layout, only non-default configs."""
import uuid

from kcore.cli.client_commands import describe_topic_text
from kcore.client.admin import ConfigEntry
from kcore.client.metadata import PartitionMetadata, TopicMetadata
from kcore.protocol.constants import ConfigSource


def _topic():
    partitions = {i: PartitionMetadata("t", i, leader_id=i % 2, leader_epoch=0,
                                   replicas=(i % 2, 1 - i % 2), isr=(i % 2,))
                  for i in range(2)}
    partitions[2] = PartitionMetadata("t", 2, leader_id=-1, leader_epoch=-1, replicas=(0, 1), isr=())
    return TopicMetadata("t", 0, False, partitions)


def test_describe_lists_partitions_with_leader_replicas_and_isr():
    header, *lines = describe_topic_text(_topic(), []).splitlines()
    assert header == "Topic: t\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: "
    assert lines == [
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0",
        "\tTopic: t\tPartition: 1\tLeader: 1\tReplicas: 1,0\tIsr: 1",
        "\tTopic: t\tPartition: 2\tLeader: none\tReplicas: 0,1\tIsr: ",
    ]


def test_describe_shows_only_configs_that_differ_from_the_default():
    configs = [
        ConfigEntry("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False),
        ConfigEntry("segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG, True),
        ConfigEntry("cleanup.policy", "compact", ConfigSource.UNKNOWN, False),  # v0 answer
        ConfigEntry("sasl.secret", "x", ConfigSource.STATIC_BROKER_CONFIG, False,
                    is_sensitive=True),
    ]
    header = describe_topic_text(_topic(), configs).splitlines()[0]
    assert header.endswith("Configs: retention.ms=1000,cleanup.policy=compact,"
                           "sasl.secret=<sensitive>")


def test_describe_shows_the_topic_id_in_kafkas_base64_when_the_broker_tells_it():
    topic = TopicMetadata("t", 0, False, {}, uuid.UUID(bytes=bytes(range(16))))
    assert describe_topic_text(topic, []) == (
        "Topic: t\tTopicId: AAECAwQFBgcICQoLDA0ODw\tPartitionCount: 0\tReplicationFactor: 0\tConfigs: ")

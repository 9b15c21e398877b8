"""An asyncio Kafka client on kcore.protocol: connections, admin, producer, consumer.

Layers, each on the one below::

    Admin / Producer / Consumer      admin.py, producer.py, consumer.py
    fetch / list_offsets / produce   fetch.py, producer.produce_batch
    KafkaClient                      bootstrap, connection pool, metadata
    BrokerConnection                 framing, correlation ids, ApiVersions

It imports only kcore.protocol and serves the CLI, benchmarks and the
follower fetcher.
"""
from kcore.client.admin import (
    Admin,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    NewTopic,
)
from kcore.client.client import KafkaClient, parse_bootstrap_servers
from kcore.client.connection import BrokerConnection
from kcore.client.consumer import Consumer, OffsetReset
from kcore.client.errors import BrokerConnectionError, ClientError, KafkaError
from kcore.client.fetch import (
    FetchedPartition,
    FetchPosition,
    fetch,
    list_offsets,
    records_from,
)
from kcore.client.formatting import RecordFormatter
from kcore.client.metadata import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata, TopicPartition
from kcore.client.partitioner import StickyPartitioner, murmur2, partition_for_key
from kcore.client.producer import ProduceError, Producer, ProduceResult, produce_batch
from kcore.protocol.constants import (
    ACKS_ALL,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ConfigResourceType,
    ConfigSource,
)

__all__ = [
    "Admin", "AlterConfigOp", "ClusterDescription", "ConfigEntry", "ConfigResourceType",
    "ConfigSource", "NewTopic", "KafkaClient", "parse_bootstrap_servers", "BrokerConnection",
    "Consumer", "OffsetReset", "BrokerConnectionError", "ClientError", "KafkaError",
    "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "READ_COMMITTED", "READ_UNCOMMITTED",
    "FetchedPartition", "FetchPosition", "fetch", "list_offsets", "records_from",
    "RecordFormatter", "BrokerMetadata", "ClusterMetadata", "PartitionMetadata", "TopicMetadata", "TopicPartition",
    "StickyPartitioner", "murmur2", "partition_for_key", "ACKS_ALL", "ProduceError", "Producer",
    "ProduceResult", "produce_batch",
]

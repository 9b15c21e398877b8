"""An asyncio Kafka client on kcore.protocol: connections, admin, producer, consumer.

Layers, each on the one below::

    Admin / Producer / Consumer      admin.py, producer.py, consumer.py
    GroupAdmin, TransactionAdmin,    groups.py, transactions.py, acls.py,
    AclAdmin, QuotaAdmin, UserAdmin  quotas.py, users.py (what Kafka's tools do)
    fetch / list_offsets / produce   fetch.py, fetch_session.py (KIP-227),
                                     producer.produce_batch
    KafkaClient                      client.py: bootstrap, connection pool, metadata
    BrokerConnection                 connection.py: framing, correlation ids,
                                     ApiVersions, TLS and SASL (security.py)

Besides kcore.protocol it imports only pure parts of kcore: properties parsing
(kcore.config, kcore.listener_config) and the security model
(kcore.security: ACL bindings, quota entities, SCRAM, JAAS).

It serves the ``kcore`` command, and a broker's own connections to other
brokers: follower fetchers (kcore.replication.fetcher), the controller's
channels and a broker's requests to the controller (kcore.controller),
transaction markers and the console's end offsets (``BrokerPool``,
broker_pool.py), all over the inter-broker listener's security
(inter_broker.py).
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

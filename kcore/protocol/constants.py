"""Numbers the Kafka protocol gives a meaning, in one place for every layer.

Each is Kafka's value (its class in parentheses), so brokers, clients and
tools built on kcore agree with Kafka and with each other.
"""
from __future__ import annotations

import enum

# The wire's int32 and int64 (Java's Integer and Long): Kafka's "no limit"
# for many configs is Long.MAX_VALUE, and index and sequence arithmetic wraps
# at Integer.MAX_VALUE.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Fetch and ListOffsets isolation_level (IsolationLevel).
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

# ListOffsets timestamps that ask for an offset rather than a time
# (ListOffsetsRequest.EARLIEST_TIMESTAMP / LATEST_TIMESTAMP / MAX_TIMESTAMP
# (KIP-734) / EARLIEST_LOCAL_TIMESTAMP (KIP-405) / LATEST_TIERED_TIMESTAMP
# (KIP-1005) / EARLIEST_PENDING_UPLOAD_TIMESTAMP (KIP-1023)).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

# The replica_id of a Fetch or ListOffsets from a consumer, not a follower
# (FetchRequest.CONSUMER_REPLICA_ID).
CONSUMER_REPLICA_ID = -1

# Produce acks that wait for the whole ISR (ProduceRequest acks=-1).
ACKS_ALL = -1

# A record batch of no producer (RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH).
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

# FindCoordinator key_type (FindCoordinatorRequest.CoordinatorType).
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2  # FindCoordinator of a share-partition's share coordinator (KIP-932)

# Fetch sessions, KIP-227 (FetchMetadata): a fetch without a session, and
# the epoch of the request that opens one.
INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0


class ConfigResourceType(enum.IntEnum):
    """DescribeConfigs / AlterConfigs resource types (ConfigResource.Type)."""

    TOPIC = 2
    BROKER = 4
    GROUP = 32  # share groups' configs (KIP-932's GroupConfig)


class ConfigSource(enum.IntEnum):
    """Where a described config value comes from (DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8

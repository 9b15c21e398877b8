"""Schemas of every served API, one module per API, indexed by api key.

Each module declares ``REQUEST`` and ``RESPONSE`` (``schema.Message``) and
exports their data classes under Kafka's message names (``ProduceRequest``).
"""
from __future__ import annotations

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.messages import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from kcore.protocol.schema import Message

_MODULES = {
    ApiKey.PRODUCE: produce,
    ApiKey.FETCH: fetch,
    ApiKey.LIST_OFFSETS: list_offsets,
    ApiKey.METADATA: metadata,
    ApiKey.OFFSET_COMMIT: offset_commit,
    ApiKey.OFFSET_FETCH: offset_fetch,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.JOIN_GROUP: join_group,
    ApiKey.HEARTBEAT: heartbeat,
    ApiKey.LEAVE_GROUP: leave_group,
    ApiKey.SYNC_GROUP: sync_group,
    ApiKey.DESCRIBE_GROUPS: describe_groups,
    ApiKey.LIST_GROUPS: list_groups,
    ApiKey.SASL_HANDSHAKE: sasl_handshake,
    ApiKey.API_VERSIONS: api_versions,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.INIT_PRODUCER_ID: init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch,
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn,
    ApiKey.END_TXN: end_txn,
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit,
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.ALTER_CONFIGS: alter_configs,
    ApiKey.SASL_AUTHENTICATE: sasl_authenticate,
    ApiKey.CREATE_PARTITIONS: create_partitions,
    ApiKey.DELETE_GROUPS: delete_groups,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs,
    ApiKey.OFFSET_DELETE: offset_delete,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster,
}

REQUESTS: dict[int, Message] = {int(key): module.REQUEST for key, module in _MODULES.items()}
RESPONSES: dict[int, Message] = {int(key): module.RESPONSE for key, module in _MODULES.items()}

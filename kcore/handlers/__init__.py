"""One module per Kafka API; HANDLERS maps an ApiKey to its handle()."""
from __future__ import annotations

from kcore.handlers import (alter_configs, alter_partition, api_versions, controlled_shutdown,
                            create_partitions, create_topics, delete_groups, delete_topics,
                            describe_cluster, describe_configs, describe_groups, elect_leaders,
                            fetch, find_coordinator, heartbeat, incremental_alter_configs,
                            init_producer_id, join_group, leader_and_isr, leave_group, list_groups,
                            list_offsets, metadata, offset_commit, offset_delete, offset_fetch,
                            offset_for_leader_epoch, produce, stop_replica, sync_group,
                            update_metadata)
from kcore.protocol.api_keys import ApiKey

HANDLERS = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.JOIN_GROUP: join_group.handle,
    ApiKey.SYNC_GROUP: sync_group.handle,
    ApiKey.HEARTBEAT: heartbeat.handle,
    ApiKey.LEAVE_GROUP: leave_group.handle,
    ApiKey.OFFSET_COMMIT: offset_commit.handle,
    ApiKey.OFFSET_FETCH: offset_fetch.handle,
    ApiKey.LIST_GROUPS: list_groups.handle,
    ApiKey.DESCRIBE_GROUPS: describe_groups.handle,
    ApiKey.DELETE_GROUPS: delete_groups.handle,
    ApiKey.OFFSET_DELETE: offset_delete.handle,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    # Controller to broker, broker to controller (inter-broker, pinned versions).
    ApiKey.LEADER_AND_ISR: leader_and_isr.handle,
    ApiKey.STOP_REPLICA: stop_replica.handle,
    ApiKey.UPDATE_METADATA: update_metadata.handle,
    ApiKey.CONTROLLED_SHUTDOWN: controlled_shutdown.handle,
    ApiKey.ALTER_PARTITION: alter_partition.handle,
}

"""Replication throttles of a reassignment, as kafka-reassign-partitions.sh
sets and removes them.

--execute --throttle R sets, before the moves start:

* ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` = R on every broker that holds or
  receives a moved partition (its own dynamic config);
* on each moved topic, ``leader.replication.throttled.replicas`` = the
  current replicas of its moved partitions (any of them may lead and send)
  and ``follower.replication.throttled.replicas`` = the replicas being
  added (they receive), as ``partition:broker`` pairs.

--verify, once every move of the file is complete, deletes the rates on
every broker of the cluster and the two lists on the file's topics.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from kcore.client import Admin
from kcore.client.admin import AlterConfigOp
from kcore.protocol.constants import ConfigResourceType

Partition = tuple[str, int]
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def throttled_replicas(current: Mapping[Partition, Sequence[int]],
                       plan: Mapping[Partition, Sequence[int]]) -> dict[str, tuple[str, str]]:
    """topic -> (leader list, follower list) for the partitions that move."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for (topic, index), target in sorted(plan.items()):
        existing = list(current.get((topic, index), ()))
        if list(target) == existing:
            continue
        leaders.setdefault(topic, []).extend(f"{index}:{b}" for b in existing)
        followers.setdefault(topic, []).extend(f"{index}:{b}" for b in target if b not in existing)
    return {topic: (",".join(leaders[topic]), ",".join(followers.get(topic, [])))
            for topic in leaders}


async def set_throttles(admin: Admin, current: Mapping[Partition, Sequence[int]],
                        plan: Mapping[Partition, Sequence[int]], rate: int) -> None:
    brokers = sorted({b for key in plan for b in (*current.get(key, ()), *plan[key])})
    for broker_id in brokers:
        await admin.incremental_alter_configs(
            ConfigResourceType.BROKER, str(broker_id),
            [(name, AlterConfigOp.SET, str(rate)) for name in RATES])
    for topic, (leader, follower) in throttled_replicas(current, plan).items():
        await admin.incremental_alter_configs(ConfigResourceType.TOPIC, topic, [
            (LEADER_REPLICAS, AlterConfigOp.SET, leader),
            (FOLLOWER_REPLICAS, AlterConfigOp.SET, follower)])


async def clear_throttles(admin: Admin, topics: Sequence[str]) -> None:
    for broker_id in sorted((await admin.describe_cluster()).brokers):
        await admin.incremental_alter_configs(
            ConfigResourceType.BROKER, str(broker_id),
            [(name, AlterConfigOp.DELETE, None) for name in RATES])
    for topic in sorted(set(topics)):
        await admin.incremental_alter_configs(ConfigResourceType.TOPIC, topic, [
            (LEADER_REPLICAS, AlterConfigOp.DELETE, None),
            (FOLLOWER_REPLICAS, AlterConfigOp.DELETE, None)])

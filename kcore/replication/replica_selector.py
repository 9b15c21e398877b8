"""Fetch from the closest replica (KIP-392): which replica a consumer should read.

With ``replica.selector.class`` set, the leader of a partition answers a
consumer's fetch (v11+, which carries the consumer's ``rack_id``) with a
``preferred_read_replica`` instead of data when the selector picks a
follower; the consumer then fetches from that follower, which serves
consumers up to its high watermark (handlers/fetch.py).

The candidates are Kafka's (ReplicaManager.findPreferredReadReplica): the
leader, and each in-sync follower whose last fetch showed it holds the
fetch offset (its log start offset at or below it, its log end offset at or
above it). A follower out of the ISR may lag for ever and would keep the
consumer behind. Each candidate is seen as a ``ReplicaView``: broker id,
rack, log end offset and how long ago it was last caught up.

Selectors (Kafka's ``org.apache.kafka.common.replica`` names and kcore's
own, kcore/config.py ``REPLICA_SELECTOR_CLASSES``):

- RackAwareReplicaSelector: a consumer with a rack reads from a candidate
  in its rack: the leader if it is there, else the most caught-up one (the
  largest log end offset, then the shortest time since caught up, then the
  largest broker id); a consumer without a rack, or with none in its rack,
  reads from the leader.
- LeaderSelector: always the leader (as no selector at all).

A selected replica whose broker is not live, or has no endpoint on the
listener the consumer came in on, is not offered: the leader serves. The
leader itself is never offered (-1 means "stay").

Not thread-safe: pure functions over the partition's state, called on the
broker's event loop.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kcore.config import LEADER_SELECTOR_CLASSES, RACK_AWARE_SELECTOR_CLASSES
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.partition import Partition

NO_PREFERRED_REPLICA = -1


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One candidate replica, as Kafka's ReplicaView shows it."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


class ReplicaSelector(Protocol):
    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView | None:
        """The replica the consumer should read from (``replicas`` holds the
        leader too), or None for no preference."""
        ...


class LeaderSelector:
    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView | None:
        return leader


class RackAwareReplicaSelector:
    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView | None:
        if not client_rack:
            return leader
        same_rack = [replica for replica in replicas if replica.rack == client_rack]
        if not same_rack or leader in same_rack:
            return leader
        return max(same_rack, key=lambda replica: (replica.log_end_offset,
                                                   -replica.time_since_last_caught_up_ms,
                                                   replica.broker_id))


def replica_selector(class_name: str | None) -> ReplicaSelector | None:
    """The selector ``replica.selector.class`` names (None: no selector,
    every consumer reads from the leader). The config checked the name."""
    if class_name is None:
        return None
    if class_name in RACK_AWARE_SELECTOR_CLASSES:
        return RackAwareReplicaSelector()
    if class_name in LEADER_SELECTOR_CLASSES:
        return LeaderSelector()
    raise ValueError(f"unknown replica.selector.class {class_name!r}")


def preferred_read_replica(selector: ReplicaSelector, partition: Partition,
                           metadata_cache: MetadataCache, client_rack: str, listener: str,
                           fetch_offset: int, now_ms: int) -> int:
    """The broker id a consumer of ``partition`` (led here) at
    ``fetch_offset`` should fetch from, or -1 to read from this leader."""
    leader = ReplicaView(partition.broker_id, _rack(metadata_cache, partition.broker_id),
                         partition.log_end_offset, 0)
    replicas = [leader]
    for replica_id in partition.isr:
        follower = partition.follower_state(replica_id)
        if (follower is None or follower.log_end_offset < fetch_offset
                or follower.log_start_offset > fetch_offset):
            continue
        replicas.append(ReplicaView(replica_id, _rack(metadata_cache, replica_id),
                                    follower.log_end_offset, now_ms - follower.last_caught_up_ms))
    selected = selector.select(client_rack, leader, replicas)
    if selected is None or selected is leader or not _reachable(metadata_cache, selected.broker_id,
                                                                listener):
        return NO_PREFERRED_REPLICA
    return selected.broker_id


def _rack(metadata_cache: MetadataCache, broker_id: int) -> str | None:
    broker = metadata_cache.broker(broker_id)
    return broker.rack if broker is not None else None


def _reachable(metadata_cache: MetadataCache, broker_id: int, listener: str) -> bool:
    """A live broker with an endpoint on ``listener`` (one registered without
    its endpoint list is reached on its only one)."""
    broker = metadata_cache.broker(broker_id)
    if broker is None:
        return False
    return not broker.endpoints or any(name == listener for name, _, _ in broker.endpoints)

"""Controller requests as the wire carries them, both ways: bodies the
controller sends (LeaderAndIsr v5, UpdateMetadata v7, StopReplica v3,
pinned in protocol.api_keys.INTER_BROKER_VERSIONS) built from the
controller's model, and the model read back from a decoded request on the
broker. One module, so the two directions cannot drift apart.

A topic being deleted travels in UpdateMetadata with leader -2, Kafka's
LeaderDuringDelete: brokers drop it from their metadata cache. Each topic
carries its id (LeaderAndIsr v5, UpdateMetadata v7), the same for all
its partitions. A LeaderAndIsr of type FULL names every partition its
broker hosts (a broker's first one after it joined, any after a
controller failover): the broker sets aside the logs it holds that the
request does not name, or names under another topic id (Kafka's
``LogManager.findStrayReplicas``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from kcore.controller.base import StopReplicaPartition
from kcore.metadata import NO_TOPIC_ID, BrokerInfo, PartitionState

LEADER_DURING_DELETE = -2
PLAINTEXT_SECURITY_PROTOCOL = 0
# LeaderAndIsr v5 ``type`` (Kafka's AbstractControlRequest.Type): UNKNOWN
# says nothing about the partitions left out, FULL that there are none.
UNKNOWN_REQUEST = 0
FULL_REQUEST = 2


def _by_topic(states: Iterable[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for state in states:
        grouped.setdefault(state.topic, []).append(state)
    return grouped


# -- LeaderAndIsr ------------------------------------------------------------------------
def leader_and_isr_body(controller_id: int, controller_epoch: int, broker_epoch: int,
                        states: Sequence[PartitionState], leaders: Iterable[BrokerInfo],
                        full: bool = False) -> dict:
    return {
        "controller_id": controller_id, "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch, "type": FULL_REQUEST if full else UNKNOWN_REQUEST,
        "topic_states": [{"topic_name": topic, "topic_id": items[0].topic_id, "partition_states": [{
            "partition_index": s.partition, "controller_epoch": s.controller_epoch,
            "leader": s.leader, "leader_epoch": s.leader_epoch, "isr": list(s.isr),
            "partition_epoch": s.partition_epoch, "replicas": list(s.replicas),
            "adding_replicas": [], "removing_replicas": [], "is_new": False}
            for s in items]} for topic, items in _by_topic(states).items()],
        "live_leaders": [{"broker_id": b.broker_id, "host_name": b.host, "port": b.port}
                         for b in leaders],
    }


def leader_and_isr_states(body: Any) -> tuple[list[PartitionState], list[BrokerInfo]]:
    states = [PartitionState(topic.topic_name, p.partition_index, p.leader, p.leader_epoch,
                             tuple(p.isr), tuple(p.replicas), p.partition_epoch, p.controller_epoch,
                             topic.topic_id)
              for topic in body.topic_states for p in topic.partition_states]
    leaders = [BrokerInfo(b.broker_id, b.host_name, b.port) for b in body.live_leaders]
    return states, leaders


def leader_and_isr_errors(errors: dict[tuple[str, int], int],
                          states: Sequence[PartitionState]) -> list[dict]:
    """Per-partition errors of a LeaderAndIsr v5+ response, by topic id."""
    topic_ids = {state.topic: state.topic_id for state in states}
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), code in sorted(errors.items()):
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return [{"topic_id": topic_ids.get(topic, NO_TOPIC_ID), "partition_errors": items}
            for topic, items in by_topic.items()]


# -- UpdateMetadata ------------------------------------------------------------------------
def update_metadata_body(controller_id: int, controller_epoch: int, brokers: Iterable[BrokerInfo],
                         states: Sequence[PartitionState], deleted: Iterable[PartitionState] = ()
                         ) -> dict:
    gone = [replace(s, leader=LEADER_DURING_DELETE) for s in deleted]
    return {
        "controller_id": controller_id, "controller_epoch": controller_epoch, "broker_epoch": -1,
        "topic_states": [{"topic_name": topic, "topic_id": items[0].topic_id, "partition_states": [{
            "partition_index": s.partition, "controller_epoch": s.controller_epoch,
            "leader": s.leader, "leader_epoch": s.leader_epoch, "isr": list(s.isr),
            "zk_version": s.partition_epoch, "replicas": list(s.replicas),
            "offline_replicas": []} for s in items]}
            for topic, items in _by_topic([*states, *gone]).items()],
        # The inter-broker endpoint first: receivers take it as the broker's address.
        "live_brokers": [{"id": b.broker_id, "rack": b.rack, "endpoints": [{
            "port": port, "host": host, "listener": name,
            "security_protocol": PLAINTEXT_SECURITY_PROTOCOL}
            for name, host, port in _endpoints(b)]} for b in brokers],
    }


def _endpoints(broker: BrokerInfo) -> list[tuple[str, str, int]]:
    first = (broker.listener, broker.host, broker.port)
    return [first, *(e for e in broker.endpoints if e[0] != broker.listener)]


def update_metadata_contents(body: Any) -> tuple[list[BrokerInfo], list[PartitionState], list[str]]:
    """(live brokers, partition states, deleted topics)."""
    brokers = []
    for broker in body.live_brokers:
        endpoint = broker.endpoints[0] if broker.endpoints else None
        if endpoint is not None:
            brokers.append(BrokerInfo(broker.id, endpoint.host, endpoint.port, broker.rack,
                                      listener=endpoint.listener or "PLAINTEXT",
                                      endpoints=tuple((e.listener, e.host, e.port)
                                                      for e in broker.endpoints)))
    states, deleted = [], set()
    for topic in body.topic_states:
        for p in topic.partition_states:
            if p.leader == LEADER_DURING_DELETE:
                deleted.add(topic.topic_name)
                continue
            states.append(PartitionState(topic.topic_name, p.partition_index, p.leader,
                                         p.leader_epoch, tuple(p.isr), tuple(p.replicas),
                                         p.zk_version, p.controller_epoch, topic.topic_id))
    return brokers, states, sorted(deleted)


# -- StopReplica ----------------------------------------------------------------------------
def stop_replica_body(controller_id: int, controller_epoch: int, broker_epoch: int,
                      partitions: Sequence[StopReplicaPartition]) -> dict:
    return {
        "controller_id": controller_id, "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "topic_states": [{"topic_name": topic, "partition_states": [{
            "partition_index": p.partition, "leader_epoch": p.leader_epoch,
            "delete_partition": p.delete} for p in items]}
            for topic, items in _by_topic(partitions).items()],
    }


def stop_replica_partitions(body: Any) -> list[StopReplicaPartition]:
    return [StopReplicaPartition(topic.topic_name, p.partition_index, p.leader_epoch,
                                 p.delete_partition)
            for topic in body.topic_states for p in topic.partition_states]


def partition_errors(errors: dict[tuple[str, int], int]) -> list[dict]:
    """Per-partition error entries of StopReplica responses."""
    return [{"topic_name": topic, "partition_index": index, "error_code": code}
            for (topic, index), code in sorted(errors.items())]

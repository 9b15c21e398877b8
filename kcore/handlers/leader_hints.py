"""Leader hints (KIP-951): an answer that tells a client it asked the wrong
broker names the partition's current leader and how to reach it, so the
client moves on without first asking for Metadata.

Produce v10+ fills them on NOT_LEADER_OR_FOLLOWER: per partition
``current_leader`` (leader id and epoch), and once per answer the
``node_endpoints`` of the leaders named. Fetch carries the same hints from
v16 on NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH; ``LeaderHints``
serves both.

As Kafka's KafkaApis.getCurrentLeader: the leader and epoch of the
partition this broker holds (a follower knows whom it follows), else
those of its metadata cache, else -1 and -1, which the encoder leaves out
(the tagged field's default). The hints are typed with Produce's
TypedDicts; Fetch v16+ has structs of the same names and fields, and
TypedDicts match by shape. An endpoint is given only for a live
leader, on the listener the request came in on; a client that knows no
endpoint for the leader named asks for Metadata, as before KIP-951.
"""
from __future__ import annotations

from kcore.handlers.base import BrokerFacade
from kcore.metadata import NO_LEADER
from kcore.protocol.messages.produce import LeaderIdAndEpochDict, NodeEndpointDict

NO_EPOCH = -1


class LeaderHints:
    """Collects the leaders of one answer's misdirected partitions."""

    def __init__(self, broker: BrokerFacade, listener: str):
        self._broker = broker
        self._listener = listener
        self._endpoints: dict[int, NodeEndpointDict] = {}

    def current_leader(self, topic: str, partition: int) -> LeaderIdAndEpochDict | None:
        """``{"leader_id", "leader_epoch"}`` of the partition, the leader's
        endpoint kept for ``node_endpoints``; None when neither is known
        (the field's default, which is not sent)."""
        replicas = self._broker.replica_manager
        hosted = replicas.get(topic, partition)
        if hosted is not None:
            leader_id, leader_epoch = hosted.leader_id, hosted.leader_epoch
        else:
            state = replicas.metadata_cache.partition(topic, partition)
            leader_id, leader_epoch = (state.leader, state.leader_epoch) if state else (NO_LEADER, NO_EPOCH)
        if leader_id == NO_LEADER and leader_epoch == NO_EPOCH:
            return None
        node = replicas.metadata_cache.broker(leader_id) if leader_id != NO_LEADER else None
        if node is not None and leader_id not in self._endpoints:
            host, port = node.endpoint(self._listener)
            self._endpoints[leader_id] = {"node_id": leader_id, "host": host, "port": port, "rack": node.rack}
        return {"leader_id": leader_id, "leader_epoch": leader_epoch}

    def node_endpoints(self) -> list[NodeEndpointDict]:
        """The endpoints of every leader named so far, by node id."""
        return [self._endpoints[node_id] for node_id in sorted(self._endpoints)]

"""An in-process group coordinator on a real log (one broker's storage,
restartable), and helpers to join and sync members."""
from __future__ import annotations

import asyncio
import struct

from kcore.clock import SYSTEM_CLOCK, Clock
from kcore.config import BrokerConfig, parse_topic_configs
from kcore.controller.local import LocalController
from kcore.coordinator.group import GroupConfig, GroupCoordinator, GroupMetadataManager, JoinRequest
from kcore.log.manager import LogManager
from kcore.protocol.errors import ErrorCode as E
from kcore.replication.replica_manager import ReplicaManager

# Four __consumer_offsets partitions keep each set-up to a few files.
OFFSETS_PARTITIONS = 4


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 for `topics`."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


SUB = subscription("t")


RANGE = [("range", SUB)]


class Node:
    """One broker's storage and group coordinator, restartable on its data dir."""

    def __init__(self, data_dir, clock: Clock = SYSTEM_CLOCK, **settings):
        self.data_dir = data_dir
        self.clock = clock
        self.settings = {"log.dirs": str(data_dir), "group.initial.rebalance.delay.ms": "0",
                         "group.min.session.timeout.ms": "100",
                         "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                         **{k: str(v) for k, v in settings.items()}}
        self.coordinator: GroupCoordinator | None = None

    async def start(self) -> GroupCoordinator:
        config = BrokerConfig(self.settings)
        self.log_manager = LogManager([self.data_dir], config.topic_defaults())
        self.replica_manager = ReplicaManager(0, self.log_manager, config.topic_defaults(),
                                              config["producer.id.expiration.ms"],
                                              topic_overrides=self._overrides)
        self.controller = LocalController(self.data_dir, 0, self.replica_manager)
        manager = GroupMetadataManager(self.controller, self.replica_manager,
                                       config["offsets.topic.num.partitions"], clock=self.clock)
        self.coordinator = GroupCoordinator(GroupConfig.from_broker_config(config), manager)
        self.replica_manager.leadership_listeners.append(self.coordinator.on_leadership_change)
        self.coordinator.start()
        await self.controller.start()
        await manager.ensure_topic()
        return self.coordinator

    def _overrides(self, topic: str) -> dict:
        return parse_topic_configs(self.controller.topic(topic).configs)

    def stop(self) -> None:
        self.coordinator.shutdown()
        self.replica_manager.shutdown()
        self.log_manager.shutdown()

    async def restart(self) -> GroupCoordinator:
        self.stop()
        return await self.start()

    async def create_topic(self, name: str, partitions: int) -> None:
        await self.controller.create_topic(name, partitions, 1, {})


def run(data_dir, scenario, clock: Clock = SYSTEM_CLOCK, **settings):
    """Run `scenario(node, coordinator)` on a fresh loop with a started node."""
    async def main():
        node = Node(data_dir, clock, **settings)
        coordinator = await node.start()
        try:
            return await scenario(node, coordinator)
        finally:
            node.stop()
    return asyncio.run(main())


def join(coordinator, group="g", member_id="", protocols=RANGE, instance=None, session=10_000,
         rebalance=5_000, require_known=False, protocol_type="consumer", client_id="client"):
    return coordinator.join_group(JoinRequest(group, member_id, instance, require_known, client_id,
                                              "/127.0.0.1", rebalance, session, protocol_type,
                                              list(protocols)))


async def form_group(coordinator, count, group="g", instances=None, **kwargs):
    """Join `count` members concurrently and sync them; returns the join results
    in member order, the leader first."""
    results = await asyncio.gather(*[
        join(coordinator, group, instance=instances[i] if instances else None,
             client_id=f"c{i}", **kwargs) for i in range(count)])
    leader = next(r for r in results if r.member_id == r.leader_id)
    followers = [r for r in results if r is not leader]
    assignments = {r.member_id: f"assignment-{r.member_id}".encode() for r in results}
    syncs = [asyncio.ensure_future(coordinator.sync_group(group, r.generation_id, r.member_id, None, {}))
             for r in followers]
    await asyncio.sleep(0)
    lead = await coordinator.sync_group(group, leader.generation_id, leader.member_id, None, assignments)
    assert lead.error_code == E.NONE and lead.assignment == assignments[leader.member_id]
    for sync, result in zip(await asyncio.gather(*syncs), followers):
        assert sync.error_code == E.NONE and sync.assignment == assignments[result.member_id]
    return [leader, *followers]

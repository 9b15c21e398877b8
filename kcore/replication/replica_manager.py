"""The partitions this broker hosts, created and removed as topics change.

Owns the Partition objects (log + leader state) keyed by (topic, partition)
and resolves each topic's effective configuration: the topic's own
overrides on top of the broker's defaults (`BrokerConfig.topic_defaults`).

Not safe across await; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Iterable

from kcore.replication.partition import Partition

log = logging.getLogger(__name__)


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: Any, topic_defaults: dict[str, Any],
                 producer_expiration_ms: int):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.topic_defaults = topic_defaults
        self.producer_expiration_ms = producer_expiration_ms
        self.partitions: dict[tuple[str, int], Partition] = {}

    def effective_configs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        return {**self.topic_defaults, **overrides}

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def ensure_topic(self, topic: str, num_partitions: int, overrides: dict[str, Any]) -> None:
        """Open (or create) the logs of every partition of a topic."""
        configs = self.effective_configs(overrides)
        for index in range(num_partitions):
            if (topic, index) not in self.partitions:
                log_ = self.log_manager.get_or_create_log(topic, index, configs)
                self.partitions[(topic, index)] = Partition(
                    topic, index, log_, configs, self.broker_id, self.producer_expiration_ms)

    def update_configs(self, topic: str, overrides: dict[str, Any]) -> None:
        configs = self.effective_configs(overrides)
        for (name, index), partition in self.partitions.items():
            if name == topic:
                partition.configs = configs
                self.log_manager.update_config(topic, index, configs)

    def delete_topic(self, topic: str) -> None:
        for key in [k for k in self.partitions if k[0] == topic]:
            partition = self.partitions.pop(key)
            partition.wake_waiters()
            self.log_manager.delete_log(*key)

    def topic_partitions(self, topic: str) -> Iterable[Partition]:
        return (p for (name, _), p in self.partitions.items() if name == topic)

    async def wait_for_data(self, partitions: list[Partition], timeout_s: float) -> None:
        """Park a fetch until any of its partitions gets new data (or the
        deadline): the fetch purgatory, keyed by partition."""
        if timeout_s <= 0 or not partitions:
            return
        waiters = [p.data_waiter() for p in partitions]
        try:
            await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def snapshot_producer_states(self) -> None:
        for partition in self.partitions.values():
            partition.snapshot_producer_state()

    def shutdown(self) -> None:
        for partition in self.partitions.values():
            partition.wake_waiters()
            partition.snapshot_producer_state()
        self.partitions.clear()

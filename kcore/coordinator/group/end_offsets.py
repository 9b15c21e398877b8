"""End offsets of partitions led by other brokers, for a group's lag
(lag.py).

A group's coordinator holds its committed offsets, but the high watermark
of a partition is known only to the partition's leader, which in a cluster
or a node of several processes is often another broker. The coordinator's
broker asks the leaders with ListOffsets (latest, read_uncommitted: the high
watermark), as Kafka's consumer-groups tool does, one request per leader
in parallel, each bounded by ``REQUEST_TIMEOUT_S``; a leader that does not
answer leaves its partitions' lag unknown, never a console page or a /metrics
scrape waiting.

Answers are kept (``cached``) so the once-a-second lag history can use
them without a round trip; ``refresh_in_background`` renews those of the
tracked groups at most every ``REFRESH_INTERVAL_S``.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.metadata import TopicPartition
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import CONSUMER_REPLICA_ID, LATEST_TIMESTAMP, READ_UNCOMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache

log = logging.getLogger(__name__)


REQUEST_TIMEOUT_S = 2.0
# The lag history samples once a second; asking every leader that often for
# every tracked group's partitions would be most of the inter-broker traffic
# of a console left open.
REFRESH_INTERVAL_S = 5.0
# An answer older than this is not shown as the current end offset.
MAX_AGE_S = 3 * REFRESH_INTERVAL_S


class RemoteEndOffsets:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self._known: dict[TopicPartition, tuple[int, float]] = {}  # -> (end offset, when)
        # The client id other brokers see in their request logs (kept since
        # the console first asked).
        self._pool = BrokerPool(f"kcore-console-{broker_id}", metadata_cache.address_of,
                                REQUEST_TIMEOUT_S)
        self._refreshing: asyncio.Task | None = None
        self._refreshed_at = 0.0

    def cached(self, partition: TopicPartition) -> int | None:
        found = self._known.get(partition)
        if found is None or time.monotonic() - found[1] > MAX_AGE_S:
            return None
        return found[0]

    async def fetch(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The end offset of each partition whose leader answered."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for topic, index in partitions:
            leader = self.metadata_cache.leader_of(topic, index)
            if leader is not None and leader.broker_id != self.broker_id:
                by_leader.setdefault(leader.broker_id, []).append((topic, index))
        found: dict[TopicPartition, int] = {}
        for answer in await asyncio.gather(*(self._ask(leader, wanted)
                                             for leader, wanted in by_leader.items())):
            found.update(answer)
        now = time.monotonic()
        self._known.update({partition: (offset, now) for partition, offset in found.items()})
        return found

    def refresh_in_background(self, partitions: list[TopicPartition]) -> None:
        """Renew the cached answers, unless a renewal is under way or recent."""
        now = time.monotonic()
        if not partitions or now - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        if self._refreshing is not None and not self._refreshing.done():
            return
        self._refreshed_at = now
        self._refreshing = asyncio.get_running_loop().create_task(self.fetch(partitions))

    async def _ask(self, leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        body = {"replica_id": CONSUMER_REPLICA_ID, "isolation_level": READ_UNCOMMITTED, "topics": [
            {"name": topic, "partitions": [{"partition_index": index, "timestamp": LATEST_TIMESTAMP}
                                           for index in indexes]}
            for topic, indexes in topics.items()]}
        try:
            connection = await self._pool.connection(leader)
            response = await asyncio.wait_for(connection.request(ApiKey.LIST_OFFSETS, body),
                                              REQUEST_TIMEOUT_S)
        except (BrokerConnectionError, KafkaError, OSError, LookupError, TimeoutError) as exc:
            log.debug("ListOffsets to broker %d failed: %s", leader, exc)
            self._pool.drop(leader)
            return {}
        return {(t.name, p.partition_index): p.offset for t in response.topics for p in t.partitions
                if p.error_code == ErrorCode.NONE}

    def close(self) -> None:
        self._pool.close()
        if self._refreshing is not None:
            self._refreshing.cancel()

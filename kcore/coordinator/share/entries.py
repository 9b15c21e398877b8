"""The share-partitions this broker leads, loaded from and written back to
their share coordinator (Kafka's SharePartitionManager cache and the
SharePartition's persistence).

A share-partition is loaded on its first ShareFetch: its state is read
through the persister; one never initialized starts where the group's
``share.auto.offset.reset`` says (earliest: the log start; latest, the
default: the high watermark; by_duration: the first offset at or after
now minus the duration) and that start offset is written as its initial
state. Every change of state (acknowledgements, releases, expired locks,
archived records) is written back as the whole state; a member's
acknowledgement is answered once its write is done. Writes of one
share-partition are serialized and coalesced: a write carries every
change made before it started.

Locks expire on a timer per share-partition, set no later than the
earliest lock deadline (acknowledged locks leave it early: it then finds
nothing to expire and is set again).

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kcore.coordinator.share.group_configs import ShareGroupConfigs
from kcore.coordinator.share.persister import SharePersister
from kcore.coordinator.share.records import ShareKey, ShareState
from kcore.coordinator.share.share_partition import SharePartition
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition

log = logging.getLogger(__name__)

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([DHMS])")
_SECONDS = {"D": 86400, "H": 3600, "M": 60, "S": 1}


@dataclass(eq=False)
class ShareEntry:
    key: ShareKey
    topic: str
    index: int
    share: SharePartition
    leader_epoch: int
    version: int = 0
    persisted_version: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    timer: asyncio.TimerHandle | None = None
    fenced: bool = False


class ShareEntries:
    def __init__(self, persister: SharePersister, configs: ShareGroupConfigs,
                 on_release: Callable[[], None]) -> None:
        self.persister = persister
        self.configs = configs
        self.on_release = on_release
        self.entries: dict[ShareKey, ShareEntry] = {}
        self._loading: dict[ShareKey, asyncio.Future] = {}

    # -- loading -------------------------------------------------------------------------
    async def get(self, key: ShareKey, topic: str, partition: Partition) -> tuple[int, ShareEntry | None]:
        entry = self.entries.get(key)
        if entry is not None and not entry.fenced and entry.leader_epoch == partition.leader_epoch:
            return ErrorCode.NONE, entry
        if entry is not None:
            self.drop(key)
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(self._load(key, topic, partition))
            loading.add_done_callback(lambda _f: self._loading.pop(key, None))
        return await asyncio.shield(loading)

    async def _load(self, key: ShareKey, topic: str, partition: Partition) -> tuple[int, ShareEntry | None]:
        leader_epoch = partition.leader_epoch
        code, state = await self.persister.read(key, leader_epoch)
        if code != ErrorCode.NONE:
            return code, None
        group = key.group_id
        share = SharePartition(0, self.configs.delivery_count_limit(group),
                               self.configs.defaults.max_record_locks)
        if state is None or state.start_offset < 0:
            start = self._reset_offset(group, partition)
            code = await self.persister.initialize(key, 0, start)
            if code != ErrorCode.NONE:
                return code, None
            share.reset(start)
        else:
            share.state_epoch = state.state_epoch
            share.restore(state.start_offset, state.state_batches)
        if share.start_offset < partition.log_start_offset:
            share.move_start_to(partition.log_start_offset)
        entry = ShareEntry(key, topic, partition.index, share, leader_epoch)
        self.entries[key] = entry
        log.info("share-partition %s %s-%d loaded at start offset %d", group, topic, partition.index,
                 share.start_offset)
        return ErrorCode.NONE, entry

    def _reset_offset(self, group_id: str, partition: Partition) -> int:
        reset = self.configs.auto_offset_reset(group_id)
        if reset == "earliest":
            return partition.log_start_offset
        if reset.startswith("by_duration:"):
            seconds = sum(float(amount) * _SECONDS[unit]
                          for amount, unit in _DURATION_PART.findall(reset.split("T", 1)[-1]))
            days = re.search(r"P(\d+)D", reset)
            seconds += int(days.group(1)) * 86400 if days else 0
            found = partition.log.offset_for_timestamp(int((time.time() - seconds) * 1000))
            return found[0] if found is not None and found[0] < partition.high_watermark \
                else partition.high_watermark
        return partition.high_watermark

    # -- writing back --------------------------------------------------------------------
    def changed(self, entry: ShareEntry) -> None:
        entry.version += 1

    async def persist(self, entry: ShareEntry) -> int:
        """Write the state as it is now (and every change before it)."""
        target = entry.version
        async with entry.lock:
            if entry.persisted_version >= target:
                return ErrorCode.NONE
            version = entry.version
            share = entry.share
            state = ShareState(0, share.state_epoch, entry.leader_epoch, share.start_offset,
                               share.delivery_complete_count, share.state_batches())
            code = await self.persister.write(entry.key, state)
            if code == ErrorCode.NONE:
                entry.persisted_version = max(entry.persisted_version, version)
            elif code in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH):
                # The state was reset (AlterShareGroupOffsets) or another leader
                # wrote it: load it again before the next fetch.
                entry.fenced = True
            return code

    def persist_later(self, entry: ShareEntry) -> None:
        self.changed(entry)
        task = asyncio.ensure_future(self.persist(entry))
        task.add_done_callback(_log_failure)

    # -- locks ---------------------------------------------------------------------------
    def schedule_expiry(self, entry: ShareEntry, acquired_until: float | None = None) -> None:
        """After an acquisition (``acquired_until``: its locks' deadline)
        or an acknowledgement. Neither makes an existing lock end sooner,
        so a timer set no later than the new locks stands without a scan
        of the window; one that fires early finds nothing and sets the next."""
        timer = entry.timer
        if timer is not None and (acquired_until is None or timer.when() <= acquired_until):
            return
        deadline = entry.share.next_deadline()
        if entry.timer is not None:
            if deadline is not None and entry.timer.when() <= deadline:
                return
            entry.timer.cancel()
            entry.timer = None
        if deadline is not None:
            entry.timer = asyncio.get_running_loop().call_at(deadline, self._expire, entry)

    def _expire(self, entry: ShareEntry) -> None:
        entry.timer = None
        if self.entries.get(entry.key) is not entry:
            return
        expired = entry.share.expire_locks(asyncio.get_running_loop().time())
        if expired:
            log.debug("%d record locks of %s expired", expired, entry.key)
            self.persist_later(entry)
            self.on_release()
        self.schedule_expiry(entry)

    # -- dropping ------------------------------------------------------------------------
    def drop(self, key: ShareKey) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    def drop_where(self, predicate: Callable[[ShareEntry], bool]) -> None:
        for key in [key for key, entry in self.entries.items() if predicate(entry)]:
            self.drop(key)

    def shutdown(self) -> None:
        for key in list(self.entries):
            self.drop(key)


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("writing share-partition state failed", exc_info=task.exception())

"""ShareFetch and ShareAcknowledge on the share-partitions this broker
leads (KIP-932; Kafka's SharePartitionManager and share sessions).

Share sessions, one per (group, member) on each broker:
- epoch 0 opens one (replacing any the member had) with the request's
  partitions; it may not carry acknowledgements (INVALID_REQUEST);
- other epochs must be the session's next epoch (INVALID_SHARE_SESSION_EPOCH)
  of an open session (SHARE_SESSION_NOT_FOUND); partitions are added and
  forgotten as asked, and the epoch moves on;
- epoch -1 closes the session after its acknowledgements: the records the
  member still holds on its partitions are released.

A ShareFetch first applies its acknowledgements (each partition all or
nothing; a record not acquired by this member is INVALID_RECORD_STATE,
nothing changed), then acquires up to max_records for the member across
the session's partitions. With nothing acquired it waits, up to
max_wait_ms, for new data or released records.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from kcore.coordinator.share.acquisition import Acquired, acquire_from_log
from kcore.coordinator.share.entries import ShareEntries, ShareEntry
from kcore.coordinator.share.group_configs import ShareGroupConfigs
from kcore.coordinator.share.persister import SharePersister
from kcore.coordinator.share.records import ShareKey
from kcore.coordinator.share.share_partition import AcknowledgeType
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.topic_ids import TopicIds

log = logging.getLogger(__name__)

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
# librdkafka's share consumer asks for 500 by default; a request asking
# for none gets this many.
DEFAULT_MAX_RECORDS = 500

SessionPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    partitions: dict[SessionPartition, None] = field(default_factory=dict)


@dataclass
class PartitionResult:
    """One partition's part of an answer."""
    topic_id: uuid.UUID
    index: int
    error_code: int = ErrorCode.NONE
    acknowledge_error_code: int = ErrorCode.NONE
    acquired: Acquired | None = None
    leader: tuple[int, int] = (-1, -1)
    acknowledged: bool = False


class ShareRequestError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class SharePartitionManager:
    def __init__(self, broker_id: int, replica_manager: ReplicaManager, topic_ids: TopicIds,
                 configs: ShareGroupConfigs, persister: SharePersister) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.topic_ids = topic_ids
        self.configs = configs
        self.entries = ShareEntries(persister, configs, self._wake)
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._waiters: list[asyncio.Future] = []

    # -- sessions ------------------------------------------------------------------------
    def open_session(self, group_id: str, member_id: str, epoch: int,
                     added: list[SessionPartition], forgotten: list[SessionPartition]) -> ShareSession:
        """The session this request runs in (raising ShareRequestError)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if len(self.sessions) >= self.configs.defaults.max_share_sessions and key not in self.sessions:
                raise ShareRequestError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                        "the share session cache is full")
            session = self.sessions[key] = ShareSession(group_id, member_id)
            session.partitions.update(dict.fromkeys(added))
            return session
        found = self.sessions.get(key)
        if found is None:
            raise ShareRequestError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                    f"no share session for member {member_id} of group {group_id}")
        session = found
        if epoch == FINAL_EPOCH:
            return session
        if epoch != session.epoch:
            raise ShareRequestError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                    f"the share session epoch is {session.epoch}, not {epoch}")
        session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
        session.partitions.update(dict.fromkeys(added))
        for item in forgotten:
            session.partitions.pop(item, None)
        return session

    async def close_session(self, session: ShareSession) -> None:
        """Release what the member holds on the session's partitions."""
        self.sessions.pop((session.group_id, session.member_id), None)
        await self.release_member(session.group_id, session.member_id)

    async def release_member(self, group_id: str, member_id: str) -> None:
        released = False
        writes = []
        for entry in list(self.entries.entries.values()):
            if entry.key.group_id == group_id and entry.share.release_member(member_id):
                self.entries.changed(entry)
                writes.append(self.entries.persist(entry))
                released = True
        if writes:
            await asyncio.gather(*writes)
        if released:
            self._wake()
        if not any(key[0] == group_id for key in self.sessions):
            # No member of the group reads here any more: its state is read
            # again on the next fetch (an AlterShareGroupOffsets or a
            # DeleteShareGroupOffsets in between is then seen).
            self.entries.drop_where(lambda entry: entry.key.group_id == group_id
                                    and not entry.share.acquired)

    # -- resolving partitions ------------------------------------------------------------
    def _partition(self, topic_id: uuid.UUID, index: int) -> tuple[int, str | None, Partition | None]:
        topic = self.topic_ids.name_of(topic_id)
        if topic is None:
            return ErrorCode.UNKNOWN_TOPIC_ID, None, None
        partition = self.replica_manager.get(topic, index)
        if partition is None or not partition.is_leader:
            code = self.replica_manager.partition_error(topic, index)
            return (code if code != ErrorCode.NONE else ErrorCode.NOT_LEADER_OR_FOLLOWER), topic, None
        return ErrorCode.NONE, topic, partition

    def leader_of(self, topic: str | None, index: int) -> tuple[int, int]:
        if topic is None:
            return -1, -1
        state = self.replica_manager.metadata_cache.partition(topic, index)
        return (state.leader, state.leader_epoch) if state is not None else (-1, -1)

    async def _entry(self, group_id: str, topic_id: uuid.UUID, index: int
                     ) -> tuple[int, str | None, Partition | None, ShareEntry | None]:
        code, topic, partition = self._partition(topic_id, index)
        if code != ErrorCode.NONE or partition is None or topic is None:
            return code, topic, None, None
        code, entry = await self.entries.get(ShareKey(group_id, topic_id, index), topic, partition)
        return code, topic, partition, entry

    # -- acknowledgements ----------------------------------------------------------------
    async def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                          batches: list[tuple[int, int, list[int]]], renew_allowed: bool) -> PartitionResult:
        result = PartitionResult(topic_id, index, acknowledged=True)
        code, topic, _partition, entry = await self._entry(group_id, topic_id, index)
        result.leader = self.leader_of(topic, index)
        if code != ErrorCode.NONE or entry is None:
            result.error_code = result.acknowledge_error_code = code
            return result
        if not renew_allowed and any(AcknowledgeType.RENEW in types for _f, _l, types in batches):
            result.acknowledge_error_code = ErrorCode.INVALID_REQUEST
            return result
        loop = asyncio.get_running_loop()
        renew_deadline = loop.time() + self.configs.lock_duration_ms(group_id) / 1000
        code = entry.share.acknowledge(member_id, batches, renew_deadline)
        if code == ErrorCode.NONE:
            self.entries.changed(entry)
            code = await self.entries.persist(entry)
            self._wake()
            self.entries.schedule_expiry(entry)
        result.acknowledge_error_code = code
        return result

    # -- acquisition ---------------------------------------------------------------------
    async def acquire(self, session: ShareSession, max_records: int, max_bytes: int,
                      results: dict[SessionPartition, PartitionResult],
                      record_limit: bool = False) -> list[Partition]:
        """One pass over the session's partitions; returns the partitions
        read (for a wait)."""
        group_id, member_id = session.group_id, session.member_id
        room = max_records if max_records > 0 else DEFAULT_MAX_RECORDS
        read_committed = self.configs.read_committed(group_id)
        deadline = asyncio.get_running_loop().time() + self.configs.lock_duration_ms(group_id) / 1000
        read: list[Partition] = []
        for topic_id, index in list(session.partitions):
            result = results.setdefault((topic_id, index), PartitionResult(topic_id, index))
            code, topic, partition, entry = await self._entry(group_id, topic_id, index)
            result.leader = self.leader_of(topic, index)
            if code != ErrorCode.NONE or entry is None or partition is None:
                result.error_code = code
                continue
            read.append(partition)
            if room <= 0 or max_bytes <= 0:
                continue
            before = entry.share.changes
            try:
                acquired = acquire_from_log(entry.share, partition, member_id, deadline, room,
                                            max_bytes, read_committed, record_limit)
            except Exception as exc:  # noqa: BLE001 - a storage error answers this partition
                code = getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
                result.error_code = code
                continue
            if acquired.ranges:
                result.acquired = acquired
                room -= acquired.count
                max_bytes -= acquired.size
                self.entries.schedule_expiry(entry, deadline)
            if before != entry.share.changes:
                # Records archived on the way (control records, aborted
                # transactions): written back; acquisitions alone are not.
                self.entries.persist_later(entry)
        return read

    async def wait(self, partitions: list[Partition], timeout_s: float) -> None:
        """Until new data in one of ``partitions``, released records, or the timeout."""
        if timeout_s <= 0:
            return
        released = asyncio.get_running_loop().create_future()
        self._waiters.append(released)
        waiters = [partition.data_waiter(False) for partition in partitions] + [released]
        try:
            await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            if released in self._waiters:
                self._waiters.remove(released)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- leadership and topics -----------------------------------------------------------
    def on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        if not is_leader:
            self.entries.drop_where(lambda entry: entry.topic == partition.topic
                                    and entry.index == partition.index)

    def on_topics_deleted(self, topics: set[str]) -> None:
        self.entries.drop_where(lambda entry: entry.topic in topics)

    # -- what the console and /metrics show ----------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        """Each loaded share-partition: start offset, in flight, lag."""
        rows = []
        for entry in self.entries.entries.values():
            partition = self.replica_manager.get(entry.topic, entry.index)
            end = partition.high_watermark if partition is not None else entry.share.end_offset
            share = entry.share
            rows.append({"group": entry.key.group_id, "topic": entry.topic, "partition": entry.index,
                         "start_offset": share.start_offset, "end_offset": share.end_offset,
                         "in_flight": share.in_flight, "acquired": share.acquired,
                         "lag": max(end - share.start_offset - share.delivery_complete_count, 0),
                         "deliveries": share.deliveries, "archived_by_limit": share.archived_by_limit})
        return rows

    def shutdown(self) -> None:
        self.entries.shutdown()
        self._wake()

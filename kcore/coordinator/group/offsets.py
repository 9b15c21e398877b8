"""Committed offsets and group administration: OffsetCommit, OffsetFetch,
OffsetDelete, ListGroups, DescribeGroups, DeleteGroups and offset expiry.

Commit validation is Kafka's validateOffsetCommit: a commit with
generation -1 and no member id is an admin or manually assigned consumer's
and is accepted only while the group is Empty (a group that does not exist
is created for it); any other commit must come from a current member of
the current generation; during CompletingRebalance commits get
REBALANCE_IN_PROGRESS (the member holds the new generation but no
assignment yet), while during PreparingRebalance members of the old
generation may still commit what they consumed. A commit is answered only
after its records are in the __consumer_offsets log.

Expiry (KIP-211): offsets.retention.minutes counts from the moment an
Empty group became empty, from each commit for groups that never had
members, and, for a Stable consumer group, only for topics it no longer
subscribes to. An Empty group left without offsets is removed (Dead) and
its metadata tombstoned.

OffsetOperations is a mixin of GroupCoordinator (coordinator.py), which
supplies `groups`, `manager`, `config`, `_check_group_id`,
`_validate_member` and `_schedule_heartbeat`; same concurrency contract.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kcore.clock import wall_ms
from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group.consumer_group import ConsumerGroup
from kcore.coordinator.group.consumer_member import ConsumerGroupMember
from kcore.coordinator.group.group import GroupMetadata, MemberMetadata
from kcore.coordinator.group.manager import GroupMetadataManager
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.group.state import GroupState
from kcore.coordinator.internal_log import StoreError
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:  # coordinator.py imports this module
    from kcore.coordinator.group.coordinator import GroupConfig

log = logging.getLogger(__name__)


# OffsetCommit v9: consumer-protocol members commit with their member epoch.
FIRST_MEMBER_EPOCH_COMMIT = 9


def _epoch_error(member: ConsumerGroupMember, received: int) -> int:
    """Kafka's validateMemberEpoch: a classic member's stale generation is
    ILLEGAL_GENERATION, a consumer-protocol member's STALE_MEMBER_EPOCH."""
    if received == member.member_epoch:
        return ErrorCode.NONE
    return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH


def consumer_commit_error(group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int,
                          transactional: bool = False) -> int:
    """Kafka's ConsumerGroup.validateOffsetCommit: an admin commit (epoch
    -1) only while the group has no members; otherwise a current member at
    its current epoch, and a consumer-protocol member needs v9+."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and not member.uses_classic_protocol and api_version < FIRST_MEMBER_EPOCH_COMMIT:
        return ErrorCode.UNSUPPORTED_VERSION
    return _epoch_error(member, member_epoch)


# storeOffsets error translation (Kafka GroupMetadataManager.storeOffsets).
_STORE_OFFSETS_ERRORS: dict[int, int] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


def sync_error_code(storage_error_code: int) -> int:
    """What OffsetCommit answers when the fsync of its records failed."""
    return _STORE_OFFSETS_ERRORS.get(storage_error_code, storage_error_code)


def _offsets_synced(group: GroupMetadata | ConsumerGroup, offsets: dict[TopicPartition, OffsetValue],
                    future: asyncio.Future) -> None:
    if not future.cancelled() and future.exception() is None:
        group.offsets.update(offsets)


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]
    # Why a Dead group is described Dead (DescribeGroups v6 error_message).
    message: str = ""


DEAD_GROUP = GroupSummary(GroupState.DEAD.kafka_name, "", "", [])
# Kafka's GroupType names (ListGroups v5).
CLASSIC_TYPE = "classic"
CONSUMER_TYPE = "consumer"


class OffsetOperations:
    """Offset and admin operations of GroupCoordinator (see module doc)."""

    # What GroupCoordinator supplies, declared for the type checker.
    groups: dict[str, GroupMetadata]
    consumer_groups: dict[str, ConsumerGroup]
    manager: GroupMetadataManager
    config: GroupConfig
    active: bool
    if TYPE_CHECKING:
        def _check_group_id(self, group_id: str, allow_empty: bool = False) -> int: ...
        def _validate_member(self, group: GroupMetadata, member_id: str,
                             group_instance_id: str | None) -> int: ...
        def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                                timeout_ms: int | None = None) -> None: ...
        def _cleanup_consumer_group(self, group: ConsumerGroup, offsets: list[TopicPartition],
                                    delete: bool = False) -> None: ...

    # -- OffsetCommit ----------------------------------------------------------------
    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id: int, offsets: dict[TopicPartition, OffsetValue],
                       syncs: list | None = None, api_version: int = 0) -> dict[TopicPartition, int]:
        """Error code per partition. ``syncs``: where a flush.messages=1
        commit leaves (future, partitions) for the caller to await before it
        answers (see ``sync_error_code``); the offsets count (OffsetFetch,
        the cache) once that sync succeeded. Without it the append is
        fsynced here."""
        error = self._check_group_id(group_id, allow_empty=True)
        if error:
            return dict.fromkeys(offsets, error)
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            error = consumer_commit_error(consumer_group, member_id, generation_id, api_version)
            if error:
                return dict.fromkeys(offsets, error)
            return self._store_offsets(consumer_group, offsets, syncs)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # v9+ says the group is not there; older versions keep
                # ILLEGAL_GENERATION (Kafka's OffsetMetadataManager).
                missing = (ErrorCode.GROUP_ID_NOT_FOUND if api_version >= FIRST_MEMBER_EPOCH_COMMIT
                           else ErrorCode.ILLEGAL_GENERATION)
                return dict.fromkeys(offsets, missing)
            group = self.groups[group_id] = GroupMetadata(group_id, clock=self.manager.clock)
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error:
            return dict.fromkeys(offsets, error)
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            return dict.fromkeys(offsets, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._schedule_heartbeat(group, group.get(member_id))
        return self._store_offsets(group, offsets, syncs)

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> int:
        if group.is_state(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_state(GroupState.EMPTY):
            return ErrorCode.NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error:
                return error
            return ErrorCode.ILLEGAL_GENERATION if generation_id != group.generation_id else ErrorCode.NONE
        if not group.is_state(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _store_offsets(self, group: GroupMetadata | ConsumerGroup, offsets: dict[TopicPartition, OffsetValue],
                       syncs: list | None = None) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, OffsetValue] = {}
        for key, value in offsets.items():
            if len(value.metadata) > self.config.offset_metadata_max_bytes:
                errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[key] = value
        try:
            synced = self.manager.store_offsets(group.group_id, valid, wait=syncs is not None)
        except StoreError as exc:
            code = _STORE_OFFSETS_ERRORS.get(exc.error_code, exc.error_code)
            log.warning("group %s: offset commit failed: error %d %s", group.group_id, code, exc)
            errors.update(dict.fromkeys(valid, code))
            return errors
        if synced is None or syncs is None:
            group.offsets.update(valid)
        else:
            # Before the caller's await resumes: callbacks run in the order added.
            synced.add_done_callback(functools.partial(_offsets_synced, group, valid))
            syncs.append((synced, list(valid)))
        errors.update(dict.fromkeys(valid, ErrorCode.NONE))
        return errors

    # -- OffsetFetch -----------------------------------------------------------------
    def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[int, list[tuple[str, int, OffsetValue | None]]]:
        """Committed offsets of `partitions`, or of every partition with one
        when None; a partition without a commit comes back with None. A
        consumer-protocol member (OffsetFetch v9) names itself and its
        epoch, which must be current."""
        error = self._check_group_id(group_id, allow_empty=True)
        if error:
            return error, []
        error = self._validate_offset_fetch(group_id, member_id, member_epoch)
        if error:
            return error, []
        group = self.groups.get(group_id) or self.consumer_groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if partitions is None:
            return ErrorCode.NONE, [(t, p, value) for (t, p), value in sorted(offsets.items())]
        return ErrorCode.NONE, [(t, p, offsets.get((t, p))) for t, p in partitions]

    def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        """Partitions with a transactional offset commit not yet settled by
        its marker (Kafka's hasPendingOffsetCommitsForTopicPartition), in a
        classic or a consumer-protocol group."""
        group = self.groups.get(group_id) or self.consumer_groups.get(group_id)
        if group is None:
            return set()
        return {tp for offsets in group.pending_txn_offsets.values() for tp in offsets}

    def _validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """Kafka's validateOffsetFetch: classic groups check nothing; a
        consumer group checks a named member and its epoch."""
        group = self.consumer_groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _epoch_error(member, member_epoch)

    # -- OffsetDelete ----------------------------------------------------------------
    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                       ) -> tuple[int, dict[TopicPartition, int]]:
        error = self._check_group_id(group_id)
        if error:
            return error, {}
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            subscribed = set() if consumer_group.is_empty() else consumer_group.subscribed_topic_names()
            eligible = [tp for tp in partitions if tp[0] not in subscribed]
            self._cleanup_consumer_group(consumer_group, eligible)
            return ErrorCode.NONE, {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] in subscribed
                                    else ErrorCode.NONE for tp in partitions}
        group = self.groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        errors: dict[TopicPartition, int] = {}
        if group.is_state(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == consumer_protocol.PROTOCOL_TYPE:
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            errors = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions
                      if group.is_subscribed_to_topic(tp[0])}
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            self._cleanup_group_metadata(group, eligible)
            errors.update(dict.fromkeys(eligible, ErrorCode.NONE))
        return ErrorCode.NONE, errors

    # -- ListGroups / DescribeGroups / DeleteGroups ----------------------------------
    def list_groups(self) -> tuple[int, list[tuple[str, str, str, str]]]:
        """(error, [(group_id, protocol_type, state, group type)])."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, [(g.group_id, g.protocol_type or "", g.state.kafka_name, CLASSIC_TYPE)
                                for g in self.groups.values() if not g.is_state(GroupState.DEAD)] + [
            (g.group_id, g.protocol_type, g.state.kafka_name, CONSUMER_TYPE)
            for g in self.consumer_groups.values()]

    def describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._check_group_id(group_id, allow_empty=True)
        if error:
            return error, GroupSummary("", "", "", [])
        if group_id in self.consumer_groups:
            return ErrorCode.NONE, GroupSummary(GroupState.DEAD.kafka_name, "", "", [],
                                                f"Group {group_id} is not a classic group.")
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, DEAD_GROUP
        stable = group.is_state(GroupState.STABLE)
        protocol = group.protocol_name if stable else None
        members = [MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.metadata(protocol) if protocol else b"",
                                 m.assignment if stable else b"")
                   for m in group.members.values()]
        return ErrorCode.NONE, GroupSummary(group.state.kafka_name, group.protocol_type or "",
                                            protocol or "", members)

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        for group_id in group_ids:
            error = self._check_group_id(group_id, allow_empty=True)
            group = self.groups.get(group_id)
            consumer_group = self.consumer_groups.get(group_id)
            if error:
                results[group_id] = error
            elif consumer_group is not None:
                if not consumer_group.is_empty():
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self._cleanup_consumer_group(consumer_group, list(consumer_group.offsets), delete=True)
                    results[group_id] = ErrorCode.NONE
            elif group is None or group.is_state(GroupState.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_state(GroupState.EMPTY):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                group.transition_to(GroupState.DEAD)
                self._cleanup_group_metadata(group, list(group.offsets))
                results[group_id] = ErrorCode.NONE
                log.info("group %s deleted", group_id)
        return results

    # -- expiry and removal ----------------------------------------------------------
    def on_topics_deleted(self, topics: set[str]) -> int:
        """Drop every group's offsets of deleted topics (Kafka's
        handleDeletedPartitions); returns how many were removed."""
        removed = 0
        for group in list(self.groups.values()):
            gone = [key for key in group.offsets if key[0] in topics]
            removed += len(gone)
            if gone:
                self._cleanup_group_metadata(group, gone)
        for consumer_group in list(self.consumer_groups.values()):
            gone = [key for key in consumer_group.offsets if key[0] in topics]
            removed += len(gone)
            if gone:
                self._cleanup_consumer_group(consumer_group, gone)
        return removed

    def cleanup_expired_offsets(self, now: int | None = None) -> int:
        """Drop offsets past retention and the Empty groups left without any;
        returns how many offsets were removed."""
        now = wall_ms(self.manager.clock) if now is None else now
        removed = 0
        for group in list(self.groups.values()):
            expired = group.expired_offsets(now, self.config.offsets_retention_ms)
            removed += len(expired)
            self._cleanup_group_metadata(group, expired)
        for consumer_group in list(self.consumer_groups.values()):
            expired = consumer_group.expired_offsets(now, self.config.offsets_retention_ms)
            removed += len(expired)
            if expired or (consumer_group.is_empty() and not consumer_group.offsets):
                self._cleanup_consumer_group(consumer_group, expired)
        if removed:
            log.info("expired %d committed offsets", removed)
        return removed

    def _cleanup_group_metadata(self, group: GroupMetadata, offsets: list[TopicPartition]) -> None:
        """Remove `offsets` from a group; an Empty group left with none dies.
        Tombstones go to the log; memory changes even if that write fails, as
        in Kafka (the next expiry pass or compaction settles the log)."""
        for key in offsets:
            group.offsets.pop(key, None)
        if group.is_state(GroupState.EMPTY) and not group.offsets and not group.pending_txn_offsets:
            group.transition_to(GroupState.DEAD)
        is_dead = group.is_state(GroupState.DEAD)
        if is_dead and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        if not offsets and not is_dead:
            return
        try:
            self.manager.tombstones(group.group_id, list(offsets), include_group=is_dead)
        except StoreError as exc:
            log.warning("group %s: writing tombstones failed: error %d %s", group.group_id,
                        exc.error_code, exc)

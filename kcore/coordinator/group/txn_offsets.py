"""Transactional offset commits (TxnOffsetCommit) and their outcome.

A transactional producer commits a consumer group's offsets inside its
transaction: they are written to the group's __consumer_offsets partition
as part of the producer's transaction (a transactional batch) and kept
aside, per producer id, until the transaction's marker reaches that
partition: COMMIT makes them the group's committed offsets, ABORT drops
them (Kafka's GroupMetadata pendingTransactionalOffsetCommits). A consumer
reading them before the marker still sees the previous commit.

Validation (Kafka's doTxnCommitOffsets): a group that does not exist is
created Empty; a Dead group answers COORDINATOR_NOT_AVAILABLE; with v3's
group metadata (KIP-447) an unknown member gets UNKNOWN_MEMBER_ID, a
stale static instance FENCED_INSTANCE_ID and another generation
ILLEGAL_GENERATION, so a zombie consumer-producer pair cannot commit
after its partitions moved. A consumer-protocol group checks the member
and its member epoch instead (ILLEGAL_GENERATION when stale, as Kafka
answers TxnOffsetCommit). The answer waits for the ISR.

TxnOffsetOperations is a mixin of GroupCoordinator (coordinator.py), like
OffsetOperations; same concurrency contract.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcore.coordinator.group.consumer_group import ConsumerGroup
from kcore.coordinator.group.group import GroupMetadata
from kcore.coordinator.group.manager import OFFSETS_TOPIC, GroupMetadataManager
from kcore.coordinator.group.offsets import consumer_commit_error, sync_error_code
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.group.state import GroupState
from kcore.coordinator.internal_log import StoreError
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig

log = logging.getLogger(__name__)



class TxnOffsetOperations:
    if TYPE_CHECKING:
        groups: dict[str, GroupMetadata]
        consumer_groups: dict[str, ConsumerGroup]
        manager: GroupMetadataManager
        config: GroupConfig

        def _check_group_id(self, group_id: str, allow_empty: bool = False) -> int: ...
        def _validate_member(self, group: GroupMetadata, member_id: str,
                             group_instance_id: str | None) -> int: ...

    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                 member_id: str, group_instance_id: str | None,
                                 generation_id: int, offsets: dict[TopicPartition, OffsetValue]
                                 ) -> dict[TopicPartition, int]:
        error = self._check_group_id(group_id, allow_empty=True)
        if error:
            return dict.fromkeys(offsets, error)
        consumer_group = self.consumer_groups.get(group_id)
        group: GroupMetadata | ConsumerGroup
        if consumer_group is not None:
            group = consumer_group
            # A consumer group's member commits with its member epoch; a
            # stale one is ILLEGAL_GENERATION here (Kafka's
            # validateTransactionalOffsetCommit).
            error = consumer_commit_error(consumer_group, member_id, generation_id, 0, transactional=True)
            error = ErrorCode.ILLEGAL_GENERATION if error == ErrorCode.STALE_MEMBER_EPOCH else error
        else:
            classic = self.groups.get(group_id)
            if classic is None:
                classic = self.groups[group_id] = GroupMetadata(group_id, clock=self.manager.clock)
            group = classic
            error = self._validate_txn_commit(classic, member_id, group_instance_id, generation_id)
        if error:
            return dict.fromkeys(offsets, error)
        errors: dict[TopicPartition, int] = {
            tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, value in offsets.items()
            if len(value.metadata) > self.config.offset_metadata_max_bytes}
        valid = {tp: value for tp, value in offsets.items() if tp not in errors}
        if not valid:
            return errors
        try:
            replicated = self.manager.store_txn_offsets(group_id, producer_id, producer_epoch, valid)
            if replicated is not None:
                await asyncio.shield(replicated)
        except StoreError as exc:
            code = sync_error_code(exc.error_code)
            log.warning("group %s: transactional offset commit failed: %s %s", group_id,
                        ErrorCode(code).name, exc)
            errors.update(dict.fromkeys(valid, code))
            return errors
        group.pending_txn_offsets.setdefault(producer_id, {}).update(valid)
        errors.update(dict.fromkeys(valid, ErrorCode.NONE))
        return errors

    def _validate_txn_commit(self, group: GroupMetadata, member_id: str,
                             group_instance_id: str | None, generation_id: int) -> int:
        if group.is_state(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if member_id or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error:
                return error
        if generation_id >= 0 and generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def on_txn_marker(self, topic: str, index: int, producer_id: int, commit: bool) -> None:
        """A marker of ``producer_id``'s transaction is on the ISR of a
        __consumer_offsets partition this broker leads (a replica manager
        listener): settle the transaction's offsets in its groups."""
        if topic != OFFSETS_TOPIC:
            return
        groups: list[GroupMetadata | ConsumerGroup] = [*self.groups.values(), *self.consumer_groups.values()]
        for group in groups:
            if producer_id not in group.pending_txn_offsets \
                    or self.manager.partition_for(group.group_id) != index:
                continue
            offsets = group.pending_txn_offsets.pop(producer_id)
            if commit:
                group.offsets.update(offsets)

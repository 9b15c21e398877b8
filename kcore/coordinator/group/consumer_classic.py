"""Classic-protocol members of a consumer-protocol group (Kafka 4: a group
upgraded while old consumers are still in it, or old consumers joining a
consumer group).

The member speaks JoinGroup, SyncGroup, Heartbeat and LeaveGroup; the
coordinator treats it as a consumer-group member (Kafka's
classicGroupJoinToConsumerGroup and its siblings):

- JoinGroup: its subscription (topics, owned partitions, rack) from the
  first protocol's metadata; the member is created or updated, the group
  epoch and target assignment move as for a heartbeat, and the member is
  reconciled with the partitions it says it owns. The answer is at once:
  generation = member epoch, no leader (the coordinator assigns), the
  member's first protocol. MEMBER_ID_REQUIRED for a dynamic member
  without an id (v4+), INCONSISTENT_GROUP_PROTOCOL when it shares no
  protocol with the group's other classic members.
- SyncGroup: its current assignment, in its subscription's version;
  REBALANCE_IN_PROGRESS while the group epoch is ahead of its epoch (it
  must rejoin), ILLEGAL_GENERATION for another generation.
- Heartbeat: REBALANCE_IN_PROGRESS when it must rejoin to progress (a
  newer group epoch, partitions to revoke, partitions freed for it).
- LeaveGroup: its records tombstoned and the group epoch bumped.

Timers: the member's own session timeout; after REBALANCE_IN_PROGRESS it
must rejoin within its rebalance timeout, and after JoinGroup sync within
it, or it is fenced.

ClassicMembersOperations is a mixin of GroupCoordinator; same concurrency contract.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group.consumer_coordinator import GroupError, Record, _Update, store_error_code
from kcore.coordinator.group.consumer_group import (
    ConsumerGroup,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    member_tombstones,
    target_member_record,
)
from kcore.coordinator.group.consumer_member import ClassicMetadata, ConsumerGroupMember, MemberState
from kcore.coordinator.group.group import JoinResult, SyncResult
from kcore.coordinator.internal_log import StoreError
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig, JoinRequest
    from kcore.coordinator.group.manager import GroupMetadataManager

log = logging.getLogger(__name__)


class ClassicMembersOperations:
    """Classic requests to consumer-protocol groups (see module doc)."""

    if TYPE_CHECKING:
        consumer_groups: dict[str, ConsumerGroup]
        manager: GroupMetadataManager
        config: GroupConfig

        def _check_size(self, group: ConsumerGroup, member_id: str) -> None: ...
        def _update_group(self, update: _Update, member: ConsumerGroupMember,
                          updated: ConsumerGroupMember) -> tuple[int, dict]: ...
        def _reconcile(self, update: _Update, member: ConsumerGroupMember, target_epoch: int,
                       target: dict, owned) -> ConsumerGroupMember: ...
        def _write(self, update: _Update) -> asyncio.Future | None: ...
        def _schedule(self, group_id: str, member_id: str, kind: str, delay_ms: int, callback, *args) -> None: ...
        def _cancel_timer(self, group_id: str, member_id: str, kind: str) -> None: ...
        def _cancel_member_timers(self, group_id: str, member_id: str) -> None: ...
        def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None: ...
        def _metadata_hash(self, topic_names: set[str]) -> int: ...
        def fence_consumer_member(self, group_id: str, member_id: str, reason: str,
                                  epoch: int | None = None) -> None: ...
        _consumer_timers: dict

    # -- JoinGroup -------------------------------------------------------------------
    async def classic_join_consumer_group(self, request: JoinRequest) -> JoinResult:
        group = self.consumer_groups[request.group_id]
        try:
            update, member = self._classic_join(group, request)
            if update is None:
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member.member_id)
            replicated = self._write(update)
        except GroupError as exc:
            return JoinResult(exc.code, request.member_id)
        if replicated is not None:
            try:
                await asyncio.shield(replicated)
            except StoreError as exc:
                return JoinResult(store_error_code(exc.error_code), request.member_id)
        assert member.classic is not None
        self._cancel_timer(group.group_id, member.member_id, "join")
        self._schedule_session_timeout(group.group_id, member.member_id, member.classic.session_timeout_ms)
        self._schedule(group.group_id, member.member_id, "sync", member.rebalance_timeout_ms,
                       self.fence_consumer_member, group.group_id, member.member_id,
                       "it did not sync within its rebalance timeout")
        return JoinResult(ErrorCode.NONE, member.member_id, member.member_epoch,
                          member.classic.protocols[0][0], "", [])

    def _classic_join(self, group: ConsumerGroup, request: JoinRequest
                      ) -> tuple[_Update | None, ConsumerGroupMember]:
        is_unknown = request.member_id == ""
        member_id = request.member_id or str(uuid.uuid4())
        self._check_size(group, member_id)
        names = {name for name, _ in request.protocols}
        if not group.supports_classic_protocols(request.protocol_type, names):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Member {member_id}'s protocols are not supported.")
        if is_unknown and request.require_known_member_id and request.group_instance_id is None:
            return None, ConsumerGroupMember(member_id)
        update = _Update(group, [])
        member = self._classic_member(update, member_id, request.group_instance_id, is_unknown)
        subscription = consumer_protocol.decode_subscription(request.protocols[0][1])
        if subscription is None:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Member {member_id}'s subscription is not the consumer embedded protocol.")
        updated = member.replace(
            instance_id=request.group_instance_id or member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=tuple(subscription.topics), client_id=request.client_id,
            client_host=request.client_host,
            classic=ClassicMetadata(request.session_timeout_ms, tuple(request.protocols)))
        target_epoch, target = self._update_group(update, member, updated)
        owned = []
        for item in subscription.owned_partitions:
            metadata = self.manager.topic_metadata(item.topic)
            if metadata is not None:
                owned.append((metadata[0], list(item.partitions)))
        return update, self._reconcile(update, updated, target_epoch, target, owned)

    def _classic_member(self, update: _Update, member_id: str, instance_id: str | None,
                        is_unknown: bool) -> ConsumerGroupMember:
        group = update.group
        if instance_id is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        existing = group.static_member(instance_id)
        if existing is None:
            if not is_unknown:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            return ConsumerGroupMember(member_id)
        if not is_unknown:
            if existing.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} was fenced "
                                 f"by member {existing.member_id}.")
            return existing
        replaced = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        update.records += member_tombstones(group.group_id, existing.member_id)
        update.records += [member_metadata_record(group.group_id, replaced),
                           target_member_record(group.group_id, member_id,
                                                group.target.get(existing.member_id, {})),
                           current_assignment_record(group.group_id, replaced)]
        self._cancel_member_timers(group.group_id, existing.member_id)
        return replaced

    # -- SyncGroup / Heartbeat -------------------------------------------------------
    def _classic_member_of(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                           generation_id: int) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                             f"{group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if member.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} was fenced.")
        if not member.uses_classic_protocol:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if member.member_epoch != generation_id:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                             f"The request generation id {generation_id} is not equal to the member epoch "
                             f"{member.member_epoch} of member {member_id}.")
        return member

    def classic_sync_consumer_group(self, group_id: str, generation_id: int, member_id: str,
                                    instance_id: str | None) -> SyncResult:
        group = self.consumer_groups[group_id]
        try:
            member = self._classic_member_of(group, member_id, instance_id, generation_id)
        except GroupError as exc:
            return SyncResult(exc.code)
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._rejoin_within_rebalance_timeout(group, member)
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        assert member.classic is not None
        self._cancel_timer(group_id, member_id, "sync")
        self._schedule_session_timeout(group_id, member_id, member.classic.session_timeout_ms)
        names: dict[str, list[int]] = {}
        for topic_id, partitions in member.assigned.items():
            name = self.manager.topic_name(topic_id)
            if name is not None:
                names[name] = sorted(partitions)
        version = consumer_protocol.version_of(member.classic.protocols[0][1])
        return SyncResult(ErrorCode.NONE, consumer_protocol.encode_assignment(names, version))

    def classic_heartbeat_consumer_group(self, group_id: str, member_id: str, instance_id: str | None,
                                         generation_id: int) -> int:
        group = self.consumer_groups[group_id]
        try:
            member = self._classic_member_of(group, member_id, instance_id, generation_id)
        except GroupError as exc:
            return exc.code
        assert member.classic is not None
        self._schedule_session_timeout(group_id, member_id, member.classic.session_timeout_ms)
        if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._rejoin_within_rebalance_timeout(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _rejoin_within_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if (group.group_id, member.member_id, "join") not in self._consumer_timers:
            self._schedule(group.group_id, member.member_id, "join", member.rebalance_timeout_ms,
                           self.fence_consumer_member, group.group_id, member.member_id,
                           "it did not rejoin within its rebalance timeout")

    # -- LeaveGroup ------------------------------------------------------------------
    def classic_leave_consumer_group(self, group_id: str,
                                     members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        group = self.consumer_groups[group_id]
        update = _Update(group, [])
        errors = []
        leaving: set[str] = set()
        for member_id, instance_id in members:
            try:
                member = self._leaving_member(group, member_id, instance_id)
            except GroupError as exc:
                errors.append(exc.code)
                continue
            update.records += member_tombstones(group_id, member.member_id)
            self._cancel_member_timers(group_id, member.member_id)
            leaving.add(member.member_id)
            errors.append(ErrorCode.NONE)
        if leaving:
            remaining = {m: v for m, v in group.members.items() if m not in leaving}
            update.records.append(group_epoch_record(group_id, group.group_epoch + 1,
                                                     self._metadata_hash(group.subscribed_topic_names(remaining))))
            try:
                self._write(update)
            except GroupError as exc:
                return exc.code, []
        return ErrorCode.NONE, errors

    def _leaving_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown member")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown instance")
            if member_id and member.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, "fenced instance")
        if not member.uses_classic_protocol:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, "not a classic member")
        return member


__all__ = ["ClassicMembersOperations", "Record"]

"""Classic and consumer-protocol members in one group (Kafka 4's online
migration, KIP-848).

`group.consumer.migration.policy` (bidirectional, upgrade, downgrade,
disabled) decides whether a group may change protocol while it has members:

- upgrade: the first ConsumerGroupHeartbeat to a classic group that uses
  the consumer embedded protocol turns it into a consumer group (Kafka's
  ConsumerGroup.fromClassicGroup). Its members become members of the
  consumer group that speak the classic protocol (consumer_classic.py),
  each STABLE at the classic generation, which becomes the group epoch,
  and owning the partitions of its last classic assignment, which is also
  the target; parked JoinGroup and SyncGroup requests are answered
  REBALANCE_IN_PROGRESS so their members rejoin. The classic group's
  record is tombstoned and the consumer group's written in the same batch.
  An empty classic group is simply replaced, whatever the policy.
- downgrade: when the last consumer-protocol member leaves a group whose
  other members all speak the classic protocol, it becomes a classic group
  again (Kafka's ClassicGroup.fromConsumerGroup: generation = group epoch,
  every member's assignment serialized in its subscription's version, the
  first member leader) and rebalances at once, so the remaining members
  rejoin through the classic protocol; group.max.size must allow it.

MigrationOperations is a mixin of GroupCoordinator; same concurrency contract.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kcore.clock import wall_ms
from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group.consumer_coordinator import GroupError, Record, _Update
from kcore.coordinator.group.consumer_group import (
    ConsumerGroup,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    target_epoch_record,
    target_member_record,
)
from kcore.coordinator.group.consumer_member import ClassicMetadata, ConsumerGroupMember
from kcore.coordinator.group.consumer_records import ConsumerGroupKey
from kcore.coordinator.group.group import GroupMetadata, JoinResult, SyncResult
from kcore.coordinator.group.records import GroupKey, GroupValue, MemberValue
from kcore.coordinator.group.state import GroupState
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig
    from kcore.coordinator.group.manager import GroupMetadataManager

log = logging.getLogger(__name__)


class MigrationOperations:
    """Protocol changes of a group (see module doc)."""

    if TYPE_CHECKING:
        groups: dict[str, GroupMetadata]
        consumer_groups: dict[str, ConsumerGroup]
        manager: GroupMetadataManager
        config: GroupConfig

        def _metadata_hash(self, topic_names: set[str]) -> int: ...
        def _prepare_rebalance(self, group: GroupMetadata) -> None: ...
        def _schedule_heartbeat(self, group: GroupMetadata, member, timeout_ms: int | None = None) -> None: ...
        def _cancel_member_timers(self, group_id: str, member_id: str) -> None: ...
        def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None: ...

    # -- upgrade ---------------------------------------------------------------------
    def _maybe_upgrade(self, update: _Update) -> ConsumerGroup:
        """The consumer group replacing classic group `group_id` (its records
        added to `update`), or GroupError GROUP_ID_NOT_FOUND."""
        group_id = update.group.group_id
        classic = self.groups[group_id]
        group = ConsumerGroup(group_id, self.manager.clock)
        group.offsets = classic.offsets
        group.pending_txn_offsets = classic.pending_txn_offsets
        update.records.append((GroupKey(group_id), None))
        if classic.members:
            self._check_upgrade(classic)
            conversion = self._conversion_records(classic)
            for key, value in conversion:
                if isinstance(key, ConsumerGroupKey):
                    group.replay(key, value)  # the heartbeat computes on it; _write replays again
            update.records += conversion
            update.after.append(lambda: self._drop_classic(classic, "upgraded to a consumer group"))
        else:
            update.after.append(lambda: self._drop_classic(classic, "replaced by a consumer group"))
        update.group = group
        return group

    def _check_upgrade(self, classic: GroupMetadata) -> None:
        group_id = classic.group_id
        if self.config.migration_policy not in ("bidirectional", "upgrade"):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {group_id} to consumer group because the "
                             "online upgrade is disabled.")
        if classic.protocol_type != consumer_protocol.PROTOCOL_TYPE or classic.protocol_name is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {group_id} to consumer group because the "
                             "group does not use the consumer embedded protocol.")
        if classic.size > self.config.consumer_max_size:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {group_id} to consumer group because the "
                             "group size exceeds the consumer group maximum size.")

    def _conversion_records(self, classic: GroupMetadata) -> list[Record]:
        group_id, epoch = classic.group_id, classic.generation_id
        members = []
        for item in classic.members.values():
            metadata = item.metadata(classic.protocol_name or "")
            subscription = consumer_protocol.decode_subscription(metadata)
            if subscription is None:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade the classic group {group_id} to consumer group because "
                                 "the embedded consumer protocol is malformed.")
            assigned = self._by_topic_id(consumer_protocol.assigned_partitions(item.assignment) or [])
            members.append(ConsumerGroupMember(
                item.member_id, member_epoch=epoch, previous_member_epoch=epoch,
                instance_id=item.group_instance_id, rack_id=subscription.rack_id,
                rebalance_timeout_ms=item.rebalance_timeout_ms, client_id=item.client_id,
                client_host=item.client_host, subscribed_topic_names=tuple(subscription.topics),
                assigned=assigned,
                classic=ClassicMetadata(item.session_timeout_ms, tuple(item.protocols))))
        topics = {name for member in members for name in member.subscribed_topic_names}
        out: list[Record] = [member_metadata_record(group_id, m) for m in members]
        out.append(group_epoch_record(group_id, epoch, self._metadata_hash(topics)))
        out += [target_member_record(group_id, m.member_id, m.assigned) for m in members]
        out.append(target_epoch_record(group_id, epoch))
        out += [current_assignment_record(group_id, m) for m in members]
        return out

    def _by_topic_id(self, partitions: list[tuple[str, int]]) -> dict:
        out: dict = {}
        for topic, partition in partitions:
            metadata = self.manager.topic_metadata(topic)
            if metadata is not None:
                out.setdefault(metadata[0], set()).add(partition)
        return {topic_id: frozenset(parts) for topic_id, parts in out.items()}

    def _drop_classic(self, classic: GroupMetadata, why: str) -> None:
        """After the conversion is in the log: answer the classic group's
        parked requests REBALANCE_IN_PROGRESS and stop its timers."""
        if self.groups.get(classic.group_id) is classic:
            del self.groups[classic.group_id]
        _cancel(classic.join_timer)
        for member in classic.members.values():
            _cancel(member.heartbeat_timer)
            _resolve(member.join_future, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            _resolve(member.sync_future, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        group = self.consumer_groups.get(classic.group_id)
        if group is not None:
            for converted in group.members.values():
                if converted.classic is not None:
                    self._schedule_session_timeout(group.group_id, converted.member_id,
                                                   converted.classic.session_timeout_ms)
        log.info("classic group %s %s", classic.group_id, why)

    # -- downgrade -------------------------------------------------------------------
    def _maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember, update: _Update) -> bool:
        remaining = [m for m in group.members.values() if m.member_id != leaving.member_id]
        if (leaving.uses_classic_protocol or not remaining
                or any(not m.uses_classic_protocol for m in remaining)
                or self.config.migration_policy not in ("bidirectional", "downgrade")
                or len(remaining) > self.config.max_size):
            return False
        protocol = _common_protocol(remaining)
        if protocol is None:
            return False
        value = GroupValue(consumer_protocol.PROTOCOL_TYPE, group.group_epoch, protocol, remaining[0].member_id,
                           wall_ms(self.manager.clock),
                           [self._member_value(m, protocol) for m in remaining])
        update.records += group.tombstones()
        update.records.append((GroupKey(group.group_id), value))
        update.after.append(lambda: self._install_classic(group, value))
        log.info("group %s: last consumer-protocol member %s left, back to a classic group",
                 group.group_id, leaving.member_id)
        return True

    def _member_value(self, member: ConsumerGroupMember, protocol: str) -> MemberValue:
        assert member.classic is not None
        metadata = dict(member.classic.protocols)[protocol]
        names = {}
        for topic_id, partitions in member.assigned.items():
            name = self.manager.topic_name(topic_id)
            if name is not None:
                names[name] = sorted(partitions)
        assignment = consumer_protocol.encode_assignment(names, consumer_protocol.version_of(metadata))
        return MemberValue(member.member_id, member.instance_id, member.client_id, member.client_host,
                           member.rebalance_timeout_ms, member.classic.session_timeout_ms, metadata, assignment)

    def _install_classic(self, group: ConsumerGroup, value: GroupValue) -> None:
        for member_id in group.members:
            self._cancel_member_timers(group.group_id, member_id)
        self.consumer_groups.pop(group.group_id, None)
        classic = GroupMetadata.from_value(group.group_id, value, self.manager.clock)
        classic.offsets = group.offsets
        classic.pending_txn_offsets = group.pending_txn_offsets
        self.groups[group.group_id] = classic
        for member in classic.members.values():
            self._schedule_heartbeat(classic, member)
        if classic.can_rebalance() and classic.is_state(GroupState.STABLE):
            self._prepare_rebalance(classic)


def _common_protocol(members: list[ConsumerGroupMember]) -> str | None:
    """The first protocol of the first member that every member supports."""
    sets = [{name for name, _ in m.classic.protocols} for m in members if m.classic is not None]
    first = members[0].classic
    assert first is not None
    return next((name for name, _ in first.protocols if all(name in s for s in sets)), None)


def _cancel(timer) -> None:
    if timer is not None:
        timer.cancel()


def _resolve(future, result) -> None:
    if future is not None and not future.done():
        future.set_result(result)

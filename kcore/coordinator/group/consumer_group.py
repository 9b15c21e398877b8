"""A consumer-protocol group (KIP-848) as the coordinator keeps it.

The group holds Kafka's ConsumerGroup state: the group epoch (bumped when
membership, subscriptions or the subscribed topics' metadata change), the
target assignment and its epoch (the assignor's answer for a group
epoch), each member's current assignment and epochs, the epoch at which
each partition is owned (a partition owned by one member cannot be handed
to another), static members (instance id -> member id) and the regular
expressions resolved for regex subscriptions. Committed offsets live here
as in a classic group.

Every change comes from a record (consumer_records.py): ``replay`` applies
one, at load and after every append alike, so what a coordinator rebuilds
from the log after a failover is what it had. The state is derived:

    Empty        no members
    Assigning    group epoch > target assignment epoch
    Reconciling  a member is not yet STABLE at the target assignment epoch
    Stable       every member owns its target assignment
    Dead         deleted (its records tombstoned)

Concurrency contract: not thread-safe and not safe across await; the
coordinator's event loop owns it.
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter
from dataclasses import dataclass
from enum import Enum

from kcore.clock import SYSTEM_CLOCK, Clock, wall_ms
from kcore.coordinator.group import consumer_records as records
from kcore.coordinator.group.assignors import Assignment
from kcore.coordinator.group.consumer_member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ClassicMetadata,
    ConsumerGroupMember,
    MemberState,
)
from kcore.coordinator.group.records import OffsetValue

log = logging.getLogger(__name__)


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def kafka_name(self) -> str:
        return self.value


@dataclass(frozen=True)
class ResolvedRegex:
    topics: frozenset[str]
    # The metadata version (MetadataCache.version) it was resolved against.
    version: int
    timestamp: int


class ConsumerGroup:
    """One consumer-protocol group (see module doc)."""

    protocol_type = "consumer"

    def __init__(self, group_id: str, clock: Clock = SYSTEM_CLOCK):
        self.group_id = group_id
        self._clock = clock
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.metadata_hash = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.state = ConsumerGroupState.EMPTY
        self.current_state_timestamp = wall_ms(clock)
        self.offsets: dict[tuple[str, int], OffsetValue] = {}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetValue]] = {}
        # Metadata version the subscription metadata was last computed at.
        self.metadata_version = -1

    # -- queries ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.members)

    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """A member's target; a static member replacing another takes the old one's."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target.get(previous, {})
        return self.target.get(member_id, {})

    def subscribed_topic_names(self, members: dict[str, ConsumerGroupMember] | None = None) -> set[str]:
        names: set[str] = set()
        for member in (self.members if members is None else members).values():
            names.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex is not None:
                resolved = self.resolved_regexes.get(member.subscribed_topic_regex)
                if resolved is not None:
                    names.update(resolved.topics)
        return names

    def member_topic_names(self, member: ConsumerGroupMember) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            resolved = self.resolved_regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def regexes_in_use(self, members: dict[str, ConsumerGroupMember] | None = None) -> set[str]:
        return {m.subscribed_topic_regex for m in (self.members if members is None else members).values()
                if m.subscribed_topic_regex is not None}

    def preferred_assignor(self, members: dict[str, ConsumerGroupMember]) -> str | None:
        """The server assignor most members ask for (Kafka's computePreferredServerAssignor)."""
        counts = Counter(m.server_assignor for m in members.values() if m.server_assignor)
        return counts.most_common(1)[0][0] if counts else None

    def num_classic_members(self) -> int:
        return sum(1 for member in self.members.values() if member.uses_classic_protocol)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join if it
        shares a protocol with every classic member already there."""
        if protocol_type != self.protocol_type:
            return False
        classic = [m.classic for m in self.members.values() if m.classic is not None]
        if not classic:
            return bool(names)
        return any(all(name in {n for n, _ in c.protocols} for c in classic) for name in names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            have = member.assigned.get(topic_id, frozenset())
            if any(p not in have and self.partition_epoch(topic_id, p) != -1 for p in partitions):
                return True
        return False

    # -- replay ----------------------------------------------------------------------
    def replay(self, key: records.ConsumerGroupKey, value) -> None:
        """Apply one record (value None: a tombstone)."""
        kind = key.type
        if kind == records.GROUP_METADATA:
            if value is None:
                self.state = ConsumerGroupState.DEAD
                return
            self.group_epoch = value.epoch
            self.metadata_hash = value.metadata_hash
        elif kind == records.TARGET_ASSIGNMENT_METADATA:
            self.assignment_epoch = value.assignment_epoch if value is not None else -1
        elif kind == records.TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                self.target[key.member_id] = records.assignment_of(value.topic_partitions)
        elif kind == records.MEMBER_METADATA:
            self._replay_member_metadata(key.member_id, value)
        elif kind == records.CURRENT_MEMBER_ASSIGNMENT:
            self._replay_current_assignment(key.member_id, value)
        elif kind == records.REGULAR_EXPRESSION:
            if value is None:
                self.resolved_regexes.pop(key.regular_expression, None)
            else:
                self.resolved_regexes[key.regular_expression] = ResolvedRegex(
                    frozenset(value.topics), value.version, value.timestamp)
        self._update_state()

    def _replay_member_metadata(self, member_id: str, value) -> None:
        if value is None:
            self._remove_member(member_id)
            return
        old = self.members.get(member_id) or ConsumerGroupMember(member_id)
        classic = None
        if value.classic_member_metadata is not None:
            classic = ClassicMetadata(value.classic_member_metadata.session_timeout_ms,
                                      tuple((p.name, bytes(p.metadata))
                                            for p in value.classic_member_metadata.supported_protocols))
        self._set_member(old.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms, server_assignor=value.server_assignor,
            classic=classic))

    def _replay_current_assignment(self, member_id: str, value) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._set_member(old.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                             previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                             assigned={}, pending_revocation={}))
            return
        self._set_member((old or ConsumerGroupMember(member_id)).replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState.of(value.state),
            assigned=records.assignment_of(value.assigned_partitions),
            pending_revocation=records.assignment_of(value.partitions_pending_revocation)))

    def _set_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._drop_epochs(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if member.member_epoch >= 0:
            for assignment in (member.assigned, member.pending_revocation):
                for topic_id, partitions in assignment.items():
                    for partition in partitions:
                        owner = self.partition_epochs.setdefault((topic_id, partition), member.member_epoch)
                        if owner != member.member_epoch:
                            log.warning("group %s: partition %s-%d owned at epoch %d and %d",
                                        self.group_id, topic_id, partition, owner, member.member_epoch)
                            self.partition_epochs[(topic_id, partition)] = member.member_epoch

    def _drop_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    if self.partition_epochs.get((topic_id, partition)) == member.member_epoch:
                        del self.partition_epochs[(topic_id, partition)]

    def _remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._drop_epochs(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _update_state(self) -> None:
        if self.state is ConsumerGroupState.DEAD:
            return
        if not self.members:
            state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            state = ConsumerGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            state = ConsumerGroupState.RECONCILING
        else:
            state = ConsumerGroupState.STABLE
        if state is not self.state:
            self.state = state
            self.current_state_timestamp = wall_ms(self._clock)

    # -- records ---------------------------------------------------------------------
    def tombstones(self) -> list[tuple[records.ConsumerGroupKey, None]]:
        """Records that delete the group (Kafka's createGroupTombstoneRecords order)."""
        group_id = self.group_id
        out: list[tuple[records.ConsumerGroupKey, None]] = []
        for kind in (records.CURRENT_MEMBER_ASSIGNMENT, records.TARGET_ASSIGNMENT_MEMBER):
            out += [(records.ConsumerGroupKey(kind, group_id, member_id), None) for member_id in self.members]
        out.append((records.ConsumerGroupKey(records.TARGET_ASSIGNMENT_METADATA, group_id), None))
        out += [(records.ConsumerGroupKey(records.MEMBER_METADATA, group_id, member_id), None)
                for member_id in self.members]
        out += [(records.ConsumerGroupKey(records.REGULAR_EXPRESSION, group_id, regular_expression=regex), None)
                for regex in self.resolved_regexes]
        out.append((records.ConsumerGroupKey(records.GROUP_METADATA, group_id), None))
        return out

    # -- offsets ---------------------------------------------------------------------
    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def expired_offsets(self, now: int, retention_ms: int) -> list[tuple[str, int]]:
        """Kafka's rule for consumer groups: by commit time, never for a
        topic the group subscribes to; an explicit expire time wins."""
        subscribed = self.subscribed_topic_names()
        expired = []
        for key, value in self.offsets.items():
            if key[0] in subscribed:
                continue
            if value.expire_timestamp >= 0:
                if now >= value.expire_timestamp:
                    expired.append(key)
            elif now - value.commit_timestamp >= retention_ms:
                expired.append(key)
        return expired


# Member records written when a member's metadata or assignment change.
def member_metadata_record(group_id: str, member: ConsumerGroupMember):
    classic = None
    if member.classic is not None:
        struct = records.VALUES[records.MEMBER_METADATA].fields[-1].nested
        protocol_class = struct.fields[1].nested.data_class
        classic = struct.data_class(session_timeout_ms=member.classic.session_timeout_ms,
                                    supported_protocols=[protocol_class(name=name, metadata=metadata)
                                                         for name, metadata in member.classic.protocols])
    return (records.ConsumerGroupKey(records.MEMBER_METADATA, group_id, member.member_id),
            records.value(records.MEMBER_METADATA, instance_id=member.instance_id, rack_id=member.rack_id,
                          client_id=member.client_id, client_host=member.client_host,
                          subscribed_topic_names=list(member.subscribed_topic_names),
                          subscribed_topic_regex=member.subscribed_topic_regex,
                          rebalance_timeout_ms=member.rebalance_timeout_ms,
                          server_assignor=member.server_assignor, classic_member_metadata=classic))


def current_assignment_record(group_id: str, member: ConsumerGroupMember):
    return (records.ConsumerGroupKey(records.CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id),
            records.value(records.CURRENT_MEMBER_ASSIGNMENT, member_epoch=member.member_epoch,
                          previous_member_epoch=member.previous_member_epoch, state=int(member.state),
                          assigned_partitions=records.topic_partitions(member.assigned),
                          partitions_pending_revocation=records.topic_partitions(member.pending_revocation)))


def target_member_record(group_id: str, member_id: str, assignment: Assignment):
    return (records.ConsumerGroupKey(records.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            records.value(records.TARGET_ASSIGNMENT_MEMBER,
                          topic_partitions=records.topic_partitions(assignment)))


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int):
    return (records.ConsumerGroupKey(records.GROUP_METADATA, group_id),
            records.value(records.GROUP_METADATA, epoch=epoch, metadata_hash=metadata_hash))


def target_epoch_record(group_id: str, epoch: int):
    return (records.ConsumerGroupKey(records.TARGET_ASSIGNMENT_METADATA, group_id),
            records.value(records.TARGET_ASSIGNMENT_METADATA, assignment_epoch=epoch))


def member_tombstones(group_id: str, member_id: str) -> list:
    """Kafka's removeMember order: current assignment, target, metadata."""
    return [(records.ConsumerGroupKey(kind, group_id, member_id), None)
            for kind in (records.CURRENT_MEMBER_ASSIGNMENT, records.TARGET_ASSIGNMENT_MEMBER,
                         records.MEMBER_METADATA)]

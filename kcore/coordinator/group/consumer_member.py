"""A member of a consumer-protocol group (KIP-848) and its reconciliation.

The member state machine is Kafka's (MemberState, CurrentAssignmentBuilder):
the coordinator moves a member's current assignment towards the group's
target assignment one safe step per heartbeat, so no partition is ever
owned by two members:

    from \\ to            STABLE                 UNREVOKED_PARTITIONS   UNRELEASED_PARTITIONS
    STABLE                target epoch reached   must revoke first      target epoch, waits on others
    UNREVOKED_PARTITIONS  revoked, all free      still owns revoked     revoked, some not free yet
    UNRELEASED_PARTITIONS all became free        (never)                still waiting
    UNKNOWN               (rejoined empty)       -                      -

- Revoke before assign: partitions the member keeps = current ∩ target;
  partitions to revoke = current - target; while the member still reports
  one of those (owned partitions in its heartbeat), it stays at its epoch
  in UNREVOKED_PARTITIONS and is told only what it keeps.
- Assign only what is free: a partition of the target that another member
  still owns (a partition epoch, see ConsumerGroup) is held back; the member
  moves to the target epoch in UNRELEASED_PARTITIONS and gets it on a later
  heartbeat, after its previous owner revoked it.
- A topic the member no longer subscribes to counts as revoked at once
  (Kafka 4.1's subscription consistency).

Epochs: member_epoch is what the member must send; previous_member_epoch
is accepted once more with a subset of the assignment (the answer that
bumped the epoch may have been lost).
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from kcore.coordinator.group.assignors import Assignment

# ConsumerGroupHeartbeat member epochs with a meaning of their own.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# Kafka's ConsumerGroupDescribe member_type values (KIP-1099).
CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1


class MemberState(IntEnum):
    """Kafka's MemberState; the value is what CurrentMemberAssignment records hold."""
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class FencedMemberEpoch(Exception):
    """The member must drop every partition and rejoin (FENCED_MEMBER_EPOCH)."""


@dataclass(frozen=True)
class ClassicMetadata:
    """A member that speaks the classic protocol inside a consumer group:
    its session timeout and JoinGroup protocols (name, metadata)."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMetadata | None = None

    def replace(self, **changes) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def metadata_key(self) -> tuple:
        """What ConsumerGroupMemberMetadata records: a change means a new record."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.subscribed_topic_names, self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_key(self) -> tuple:
        """What ConsumerGroupCurrentMemberAssignment records."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned,
                self.pending_revocation)


OwnedPartitions = Iterable[tuple[uuid.UUID, Iterable[int]]]


def owns_any(owned: OwnedPartitions | None, partitions: Mapping[uuid.UUID, frozenset[int]]) -> bool:
    """Whether the member still reports one of `partitions`; not knowing
    (no owned partitions in the heartbeat) counts as owning them."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[uuid.UUID, int], int], owned: OwnedPartitions | None,
              subscribed_topic_ids: frozenset[uuid.UUID]) -> ConsumerGroupMember:
    """The member's next state towards `target` (see the module table)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed_topic_ids)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed_topic_ids)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed_topic_ids)
    if owned is None or any(list(parts) for _, parts in owned):
        raise FencedMemberEpoch("the member is in an unknown state; it must give up its partitions")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned, subscribed_topic_ids)


def _next(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: Callable[[uuid.UUID, int], int], owned: OwnedPartitions | None,
          subscribed_topic_ids: frozenset[uuid.UUID]) -> ConsumerGroupMember:
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    add: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed_topic_ids else frozenset()
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        revoked = current - kept
        own_pending = member.pending_revocation.get(topic_id, frozenset())
        free = frozenset(p for p in wanted - kept
                         if partition_epoch(topic_id, p) == -1 or p in own_pending)
        unreleased = unreleased or len(free) < len(wanted - kept)
        if kept:
            keep[topic_id] = kept
        if revoked:
            revoke[topic_id] = revoked
        if free:
            add[topic_id] = free
    if revoke and owns_any(owned, revoke):
        return member.replace(state=MemberState.UNREVOKED_PARTITIONS,
                              **_epochs(member, member_epoch), assigned=keep, pending_revocation=revoke)
    for topic_id, partitions in add.items():
        keep[topic_id] = keep.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.replace(state=state, **_epochs(member, target_epoch), assigned=keep, pending_revocation={})


def _epochs(member: ConsumerGroupMember, new_epoch: int) -> dict[str, int]:
    """Kafka's updateMemberEpoch: every reconciliation step makes the
    current epoch the previous one."""
    return {"member_epoch": new_epoch, "previous_member_epoch": member.member_epoch}


def is_subset(owned: OwnedPartitions | None, assignment: Assignment) -> bool:
    """Every owned partition is in `assignment` (a missing list is not)."""
    if owned is None:
        return False
    return all(p in assignment.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def check_member_epoch(member: ConsumerGroupMember, received_epoch: int,
                       owned: OwnedPartitions | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
    if received_epoch > member.member_epoch:
        raise FencedMemberEpoch(f"the member epoch {received_epoch} is ahead of the coordinator's "
                                f"{member.member_epoch}")
    if received_epoch < member.member_epoch and (
            received_epoch != member.previous_member_epoch or not is_subset(owned, member.assigned)):
        raise FencedMemberEpoch(f"the member epoch {received_epoch} is behind the coordinator's "
                                f"{member.member_epoch}")

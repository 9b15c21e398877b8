"""One classic consumer group and its members, as the coordinator keeps them.

GroupMetadata holds what Kafka's classic GroupMetadata holds: the state
(state.GroupState, every change checked), the generation, the chosen
protocol, the leader, the members in join order, the pending members (those
that got MEMBER_ID_REQUIRED and have not rejoined), the static members
(group.instance.id -> member id) and the committed offsets.

The classes are pure bookkeeping: no timers, no I/O. The coordinator
(coordinator.py) drives them, arms the timers and writes __consumer_offsets.
The one time a group reads is the wall clock of the coordinator's clock,
for Kafka's currentStateTimestamp (written with the group, and the base
of offset expiry once the group is Empty).

Concurrency contract: not thread-safe and not safe across await; one event
loop owns every group, and each coordinator operation runs to completion
between two awaits.
"""
from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from dataclasses import dataclass, field

from kcore.clock import SYSTEM_CLOCK, Clock, wall_ms
from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group.records import GroupValue, MemberValue, OffsetValue
from kcore.coordinator.group.state import GroupState, IllegalStateError


@dataclass
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # A JoinGroup or SyncGroup response this member is waiting for.
    join_future: asyncio.Future | None = None
    sync_future: asyncio.Future | None = None
    # Event-loop time (s) of the last sign of life, the timeout it runs
    # against (the session timeout, or longer while newly joining), the timer.
    latest_heartbeat: float = 0.0
    heartbeat_timeout_ms: int = 0
    heartbeat_timer: asyncio.TimerHandle | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among those all members support."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalStateError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(frozen=True)
class JoinResult:
    error_code: int
    member_id: str
    generation_id: int = -1
    protocol_name: str | None = None
    leader_id: str = ""
    # (member_id, group_instance_id, metadata); only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(frozen=True)
class SyncResult:
    error_code: int
    assignment: bytes = b""


class GroupMetadata:
    """A classic group (see module doc)."""

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY,
                 clock: Clock = SYSTEM_CLOCK):
        self.group_id = group_id
        self.state = state
        self._clock = clock
        self.current_state_timestamp = wall_ms(clock)
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.pending_members: set[str] = set()
        self.static_members: dict[str, str] = {}
        self.offsets: dict[tuple[str, int], OffsetValue] = {}
        # TxnOffsetCommit offsets per producer id, applied at its COMMIT
        # marker and dropped at ABORT (Kafka's pendingTransactionalOffsetCommits).
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetValue]] = {}
        self.subscribed_topics: set[str] | None = None
        # Set when a member joins during the first rebalance's initial delay,
        # which then waits one more delay (Kafka's InitialDelayedJoin).
        self.new_member_added = False
        # The join-phase timer, and whether it is the initial delay (which
        # completes only when it expires, never early).
        self.join_timer: asyncio.TimerHandle | None = None
        self.in_initial_delay = False

    # -- state -------------------------------------------------------------------------
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState) -> None:
        if not target.can_follow(self.state):
            raise IllegalStateError(f"group {self.group_id} cannot go from {self.state.kafka_name} "
                                    f"to {target.kafka_name}")
        self.state = target
        self.current_state_timestamp = wall_ms(self._clock)

    def can_rebalance(self) -> bool:
        return GroupState.PREPARING_REBALANCE.can_follow(self.state)

    # -- members -----------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def add(self, member: MemberMetadata, join_future: asyncio.Future | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        member.join_future = join_future
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None \
                and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      join_future: asyncio.Future | None) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_future = join_future

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id or client_id}-{uuid.uuid4()}"

    def num_awaiting_join(self) -> int:
        return sum(1 for member in self.members.values() if member.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [member for member in self.members.values() if not member.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    # -- static membership -------------------------------------------------------------
    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known instance id registered under another member id: a duplicate."""
        known = self.static_member_id(group_instance_id)
        return known is not None and known != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str, fenced: int) -> MemberMetadata:
        """Move a static member under its new member id; the old id's pending
        JoinGroup or SyncGroup is answered with `fenced` (FENCED_INSTANCE_ID)."""
        member = self.members.pop(old_member_id)
        if member.join_future is not None and not member.join_future.done():
            member.join_future.set_result(JoinResult(fenced, old_member_id))
        if member.sync_future is not None and not member.sync_future.done():
            member.sync_future.set_result(SyncResult(fenced))
        member.join_future = None
        member.sync_future = None
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    # -- pending members (KIP-394) -----------------------------------------------------
    def add_pending_member(self, member_id: str) -> None:
        self.pending_members.add(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    # -- protocols ---------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocol_names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self.protocol_type:
            return False
        supported = Counter(name for member in self.members.values()
                            for name in set(member.protocol_names()))
        return any(supported[name] == len(self.members) for name in protocol_names)

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [set(member.protocol_names()) for member in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its favourite candidate; the
        most votes wins, ties going to the leader's preference order."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalStateError(f"group {self.group_id}: no protocol supported by all members")
        votes = Counter(member.vote(candidates) for member in self.members.values())
        best = max(votes.values())
        leader = self.members.get(self.leader_id) if self.leader_id else None
        order = leader.protocol_names() if leader else sorted(candidates)
        return next(name for name in order if votes.get(name) == best)

    # -- generations -------------------------------------------------------------------
    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False
        when nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY)

    def _compute_subscribed_topics(self) -> set[str] | None:
        """Topics of a consumer group's subscriptions; None when unknown (not
        a consumer group, no protocol yet, or a subscription that does not parse)."""
        if self.protocol_type != consumer_protocol.PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            member_topics = consumer_protocol.subscribed_topics(member.metadata(self.protocol_name))
            if member_topics is None:
                return None
            topics |= member_topics
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        if self.protocol_name is None:
            raise IllegalStateError(f"group {self.group_id} has no protocol in {self.state.kafka_name}")
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    # -- persistence -------------------------------------------------------------------
    def to_value(self, assignments: dict[str, bytes]) -> GroupValue:
        """The group metadata record for this generation with `assignments`."""
        protocol = self.protocol_name
        members = [MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               m.rebalance_timeout_ms, m.session_timeout_ms,
                               m.metadata(protocol) if protocol else b"",
                               assignments.get(m.member_id, b""))
                   for m in self.members.values()]
        return GroupValue(self.protocol_type or "", self.generation_id, protocol,
                          self.leader_id, self.current_state_timestamp, members)

    @classmethod
    def from_value(cls, group_id: str, value: GroupValue, clock: Clock = SYSTEM_CLOCK) -> GroupMetadata:
        """A group as the log last recorded it: Stable with its members, or Empty."""
        group = cls(group_id, GroupState.STABLE if value.members else GroupState.EMPTY, clock)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        if value.current_state_timestamp >= 0:
            group.current_state_timestamp = value.current_state_timestamp
        for item in value.members:
            member = MemberMetadata(item.member_id, item.group_instance_id, item.client_id,
                                    item.client_host, item.rebalance_timeout,
                                    item.session_timeout, value.protocol_type,
                                    [(value.protocol or "", item.subscription)], item.assignment)
            group.members[item.member_id] = member
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
        group.subscribed_topics = group._compute_subscribed_topics()
        return group

    # -- offsets -----------------------------------------------------------------------
    def expired_offsets(self, now: int, retention_ms: int) -> list[tuple[str, int]]:
        """Offsets past retention (KIP-211): an empty group's count from the
        moment it became empty; a stable consumer group's only for topics it
        no longer subscribes to; a group that never had members (only
        commits) from each commit. An explicit expire timestamp (commit v2-4
        retention_time_ms) wins."""
        if self.protocol_type and self.is_state(GroupState.EMPTY):
            def base(value: OffsetValue) -> int:
                return self.current_state_timestamp
            kept_topics: set[str] = set()
        elif (self.protocol_type == consumer_protocol.PROTOCOL_TYPE
              and self.subscribed_topics is not None and self.is_state(GroupState.STABLE)):
            def base(value: OffsetValue) -> int:
                return value.commit_timestamp
            kept_topics = self.subscribed_topics
        elif not self.protocol_type:
            def base(value: OffsetValue) -> int:
                return value.commit_timestamp
            kept_topics = set()
        else:
            return []
        expired = []
        for key, value in self.offsets.items():
            if key[0] in kept_topics:
                continue
            if value.expire_timestamp >= 0:
                if now >= value.expire_timestamp:
                    expired.append(key)
            elif now - base(value) >= retention_ms:
                expired.append(key)
        return expired

"""The classic group coordinator: membership, rebalances, session timeouts.

Follows Kafka's classic GroupCoordinator. A rebalance moves a group
Empty/Stable -> PreparingRebalance (members rejoin) -> CompletingRebalance
(the leader computes the assignment) -> Stable (SyncGroup hands it out):

- JoinGroup parks each member's request until the join phase completes:
  at once when every known member has rejoined and no MEMBER_ID_REQUIRED
  member is outstanding, else after the largest rebalance timeout (members
  that did not rejoin are dropped). Nothing waits on a session timeout. The
  first rebalance of an empty group waits `group.initial.rebalance.delay.ms`
  instead, once more for each delay in which new members arrived, up to the
  rebalance timeout (Kafka's InitialDelayedJoin).
- The protocol is the one every member supports that most members prefer;
  a member that shares none with the group gets INCONSISTENT_GROUP_PROTOCOL.
- Generation fencing: a SyncGroup, Heartbeat or OffsetCommit from another
  generation gets ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, a
  stale static instance FENCED_INSTANCE_ID.
- Session timeouts: every sign of life of a member pushes its deadline; a
  member past it is removed and the group rebalances. Members parked in
  JoinGroup or SyncGroup are alive by definition.
- Time: every deadline (session, rebalance, initial delay, pending member)
  is an event-loop timer, and the loop's clock is monotonic
  (kcore/clock.py): a step of the wall clock expires no member. The wall
  clock (the manager's clock) only stamps what Kafka writes: commit
  timestamps, currentStateTimestamp, and offset expiry judged on them.
- Static members (group.instance.id) rejoining a Stable group with an empty
  member id take over their old member's id and assignment without a
  rebalance; the old id is fenced.

A group id names one group: JoinGroup naming a share group (the share
coordinator sets ``share_group_exists``) gets INCONSISTENT_GROUP_PROTOCOL
with an empty member id, as Kafka's classicGroupJoin answers.

Offsets, listing and deletion live in offsets.py (OffsetOperations),
transactional offset commits in txn_offsets.py (TxnOffsetOperations).

Concurrency contract: not thread-safe. Everything runs on one event loop;
each public method mutates state only before its first await, so no two
operations interleave inside the state machine. JoinGroup and SyncGroup
return futures that timers and other members' requests complete.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcore.config import BrokerConfig
from kcore.coordinator.group import consumer_records
from kcore.coordinator.group.consumer_admin import ConsumerGroupAdmin
from kcore.coordinator.group.consumer_classic import ClassicMembersOperations
from kcore.coordinator.group.consumer_coordinator import ConsumerGroupOperations
from kcore.coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupState
from kcore.coordinator.group.group import GroupMetadata, JoinResult, MemberMetadata, SyncResult
from kcore.coordinator.group.manager import OFFSETS_TOPIC, GroupMetadataManager
from kcore.coordinator.group.migration import MigrationOperations
from kcore.coordinator.group.offsets import OffsetOperations
from kcore.coordinator.group.state import GroupState
from kcore.coordinator.group.txn_offsets import TxnOffsetOperations
from kcore.coordinator.internal_log import StoreError
from kcore.protocol.constants import INT32_MAX
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition

log = logging.getLogger(__name__)

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member parked in
# JoinGroup cannot heartbeat; after 5 minutes it is presumed gone.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096
# Kafka's offsets.retention.check.interval.ms default (10 minutes).
OFFSETS_RETENTION_CHECK_INTERVAL_S = 600.0

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# storeGroup error translation (Kafka GroupMetadataManager.storeGroup).
_STORE_GROUP_ERRORS: dict[int, int] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int
    max_session_timeout_ms: int
    max_size: int
    initial_rebalance_delay_ms: int
    offsets_retention_ms: int
    offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    # Consumer-protocol groups (KIP-848), Kafka's defaults.
    consumer_heartbeat_interval_ms: int = 5000
    consumer_session_timeout_ms: int = 45000
    consumer_max_size: int = INT32_MAX
    consumer_assignors: list[str] = field(default_factory=lambda: ["uniform", "range"])
    migration_policy: str = "bidirectional"

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> GroupConfig:
        """From anything indexed by Kafka's broker config names."""
        return cls(config["group.min.session.timeout.ms"], config["group.max.session.timeout.ms"],
                   config["group.max.size"], config["group.initial.rebalance.delay.ms"],
                   config["offsets.retention.minutes"] * 60_000,
                   consumer_heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
                   consumer_session_timeout_ms=config["group.consumer.session.timeout.ms"],
                   consumer_max_size=config["group.consumer.max.size"],
                   consumer_assignors=list(config["group.consumer.assignors"]),
                   migration_policy=config["group.consumer.migration.policy"])


@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    require_known_member_id: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


class GroupCoordinator(OffsetOperations, TxnOffsetOperations, ConsumerGroupOperations,
                       ConsumerGroupAdmin, MigrationOperations, ClassicMembersOperations):
    """Every group of this broker (see module doc)."""

    def __init__(self, config: GroupConfig, manager: GroupMetadataManager):
        self.config = config
        self.manager = manager
        self.groups: dict[str, GroupMetadata] = {}
        # Consumer-protocol groups (consumer_coordinator.py); a group id is
        # in one of the two maps at most.
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self._consumer_timers: dict[tuple[str, str, str], asyncio.TimerHandle] = {}
        # __consumer_offsets partitions led (and loaded) here.
        self.owned_partitions: set[int] = set()
        self.active = False
        self._retention_task: asyncio.Task | None = None
        # Set by the share-group service (a layer above): whether a share
        # group holds a group id, which then is no classic or consumer group.
        self.share_group_exists: Callable[[str], bool] = _no_share_group

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Serve the groups of every __consumer_offsets partition this broker
        leads (``on_leadership_change`` loads and unloads them)."""
        self.active = True
        self._retention_task = asyncio.get_running_loop().create_task(self._retention_loop())

    def shutdown(self) -> None:
        self.active = False
        if self._retention_task is not None:
            self._retention_task.cancel()
        for group in self.groups.values():
            _close_group(group)
        self.groups.clear()
        for timer in self._consumer_timers.values():
            timer.cancel()
        self._consumer_timers.clear()
        self.consumer_groups.clear()
        self.owned_partitions.clear()

    def on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        """A replica manager listener: this broker became the leader of a
        __consumer_offsets partition (load its groups from the log) or
        stopped being it (drop them; their members find the new
        coordinator through NOT_COORDINATOR)."""
        if partition.topic != OFFSETS_TOPIC:
            return
        if is_leader:
            self._load_partition(partition.index)
        else:
            self._unload_partition(partition.index)

    def _load_partition(self, index: int) -> None:
        if index in self.owned_partitions:
            return
        for group_id, loaded in self.manager.load_partition(index).items():
            if group_id in self.groups or group_id in self.consumer_groups:
                continue
            if loaded.consumer and self._load_consumer_group(group_id, loaded):
                continue
            if loaded.value is not None:
                group = GroupMetadata.from_value(group_id, loaded.value, self.manager.clock)
            else:
                group = GroupMetadata(group_id, clock=self.manager.clock)
            group.offsets = loaded.offsets
            group.pending_txn_offsets = loaded.pending_txn
            self.groups[group_id] = group
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        self.owned_partitions.add(index)

    def _load_consumer_group(self, group_id: str, loaded) -> bool:
        """Replay a consumer-protocol group's records; False when the log
        ends with the group deleted (or converted back to a classic one)."""
        group = ConsumerGroup(group_id, self.manager.clock)
        alive = False
        for key, value in loaded.consumer:
            if value is not None and group.state is ConsumerGroupState.DEAD:
                group = ConsumerGroup(group_id, self.manager.clock)  # deleted, then created again
            if key.type == consumer_records.GROUP_METADATA:
                alive = value is not None
            group.replay(key, value)
        if not alive or group.state is ConsumerGroupState.DEAD:
            return False
        group.offsets = loaded.offsets
        group.pending_txn_offsets = loaded.pending_txn
        self.consumer_groups[group_id] = group
        self._start_consumer_group_timers(group)
        log.info("loaded consumer group %s: epoch %d, %d members", group_id, group.group_epoch, group.size)
        return True

    def _unload_partition(self, index: int) -> None:
        if index not in self.owned_partitions:
            return
        self.owned_partitions.discard(index)
        for group_id in [g for g in self.groups if self.manager.partition_for(g) == index]:
            _close_group(self.groups.pop(group_id))
        for group_id in [g for g in self.consumer_groups if self.manager.partition_for(g) == index]:
            self._cancel_group_timers(group_id)
            del self.consumer_groups[group_id]
        log.info("no longer coordinating the groups of %s-%d", OFFSETS_TOPIC, index)

    async def _retention_loop(self) -> None:
        while True:
            await asyncio.sleep(OFFSETS_RETENTION_CHECK_INTERVAL_S)
            try:
                self.cleanup_expired_offsets()
            except Exception:
                log.exception("offset expiration failed")

    def _check_group_id(self, group_id: str, allow_empty: bool = False) -> int:
        if group_id is None or (not group_id and not allow_empty):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.partition_for(group_id) not in self.owned_partitions:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    # -- JoinGroup -------------------------------------------------------------------
    async def join_group(self, request: JoinRequest) -> JoinResult:
        if request.group_id in self.consumer_groups and not self._check_group_id(request.group_id):
            if not (self.config.min_session_timeout_ms <= request.session_timeout_ms
                    <= self.config.max_session_timeout_ms):
                return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id)
            return await self.classic_join_consumer_group(request)
        outcome = self._join(request)
        if isinstance(outcome, JoinResult):
            return outcome
        # Shielded: a client that disconnects while parked stays a member
        # until the join phase ends, as in Kafka.
        return await asyncio.shield(outcome)

    def _join(self, request: JoinRequest) -> JoinResult | asyncio.Future:
        error = self._check_group_id(request.group_id)
        if error:
            return JoinResult(error, request.member_id)
        if not (self.config.min_session_timeout_ms <= request.session_timeout_ms
                <= self.config.max_session_timeout_ms):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id)
        group = self.groups.get(request.group_id)
        if (group is None or not group.members) and self.share_group_exists(request.group_id):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        is_unknown = request.member_id == ""
        if group is None:
            if not is_unknown:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, request.member_id)
            group = self.groups[request.group_id] = GroupMetadata(request.group_id,
                                                                  clock=self.manager.clock)
            outcome = self._join_group(group, request, is_unknown)
            if (group.is_state(EMPTY) and not group.members and not group.pending_members
                    and not group.offsets):
                del self.groups[request.group_id]  # a refused first join leaves no group
            return outcome
        return self._join_group(group, request, is_unknown)

    def _join_group(self, group: GroupMetadata, request: JoinRequest,
                    is_unknown: bool) -> JoinResult | asyncio.Future:
        if not self._accept_joining_member(group, request.member_id):
            member = group.members.get(request.member_id)
            if member is not None:
                self._remove_member_and_update_group(group, member)
            group.pending_members.discard(request.member_id)
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if is_unknown:
            outcome = self._join_new_member(group, request)
        else:
            outcome = self._join_current_member(group, request)
        if group.is_state(PREPARING):
            self._try_complete_join(group)
        return outcome

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """Kafka's acceptJoiningMember: new members only up to group.max.size."""
        if group.state in (EMPTY, DEAD):
            return True
        if group.is_state(PREPARING):
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_awaiting_join() < self.config.max_size)
        return group.has(member_id) or group.size < self.config.max_size

    def _join_new_member(self, group: GroupMetadata, request: JoinRequest):
        if group.is_state(DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
        if not group.supports_protocols(request.protocol_type, [n for n, _ in request.protocols]):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        new_member_id = group.generate_member_id(request.client_id, request.group_instance_id)
        if request.group_instance_id is not None:
            old_member_id = group.static_member_id(request.group_instance_id)
            if old_member_id is not None:
                return self._replace_static_member(group, request, old_member_id, new_member_id)
            return self._add_member_and_rebalance(group, request, new_member_id)
        if request.require_known_member_id:
            group.add_pending_member(new_member_id)
            asyncio.get_running_loop().call_later(
                request.session_timeout_ms / 1000, self._expire_pending_member, group, new_member_id)
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id)
        return self._add_member_and_rebalance(group, request, new_member_id)

    def _join_current_member(self, group: GroupMetadata, request: JoinRequest):
        member_id = request.member_id
        if group.is_state(DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(request.protocol_type, [n for n, _ in request.protocols]):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if group.is_pending_member(member_id):
            return self._add_member_and_rebalance(group, request, member_id)
        error = self._validate_member(group, member_id, request.group_instance_id)
        if error:
            return JoinResult(error, member_id)
        member = group.get(member_id)
        if group.is_state(PREPARING):
            return self._update_member_and_rebalance(group, member, request)
        if group.is_state(COMPLETING):
            if member.matches(request.protocols):
                # A retry of a JoinGroup whose answer was lost: same answer.
                return self._current_generation(group, member_id, group.is_leader(member_id))
            return self._update_member_and_rebalance(group, member, request)
        if group.is_state(STABLE):
            if group.is_leader(member_id) or not member.matches(request.protocols):
                return self._update_member_and_rebalance(group, member, request)
            return self._current_generation(group, member_id, False)
        return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    def _validate_member(self, group: GroupMetadata, member_id: str,
                         group_instance_id: str | None) -> int:
        """Kafka's validateCurrentMember: the instance id (if any) must map to
        this member id, and the member must exist."""
        if group_instance_id is not None:
            known = group.static_member_id(group_instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _current_generation(self, group: GroupMetadata, member_id: str,
                            with_members: bool, leader_id: str | None = None) -> JoinResult:
        return JoinResult(ErrorCode.NONE, member_id, group.generation_id, group.protocol_name,
                          leader_id if leader_id is not None else (group.leader_id or ""),
                          group.current_member_metadata() if with_members else [])

    def _add_member_and_rebalance(self, group: GroupMetadata, request: JoinRequest,
                                  member_id: str) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        member = MemberMetadata(member_id, request.group_instance_id, request.client_id,
                                request.client_host, request.rebalance_timeout_ms,
                                request.session_timeout_ms, request.protocol_type,
                                list(request.protocols), is_new=True)
        if group.is_state(PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, future)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)
        return future

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     request: JoinRequest) -> asyncio.Future:
        future = self._park_join(group, member, request)
        self._maybe_prepare_rebalance(group)
        return future

    def _park_join(self, group: GroupMetadata, member: MemberMetadata,
                   request: JoinRequest) -> asyncio.Future:
        # A second JoinGroup from the same member replaces the first, whose
        # client has given up on it; answer it so its connection moves on.
        _resolve(member.join_future, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        future = asyncio.get_running_loop().create_future()
        group.update_member(member, list(request.protocols), request.rebalance_timeout_ms,
                            request.session_timeout_ms, future)
        return future

    def _replace_static_member(self, group: GroupMetadata, request: JoinRequest,
                               old_member_id: str, new_member_id: str):
        """A static member restarted: it takes over its old member's place."""
        instance_id = request.group_instance_id
        assert instance_id is not None  # only static members are replaced
        previous_leader = group.leader_id or ""
        member = group.replace_static_member(instance_id, old_member_id,
                                             new_member_id, ErrorCode.FENCED_INSTANCE_ID)
        self._schedule_heartbeat(group, member)
        if not group.is_state(STABLE):
            future = self._park_join(group, member, request)
            if group.is_state(COMPLETING):
                # The leader may already hold the old member id: assign again.
                self._prepare_rebalance(group)
            return future
        old = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, list(request.protocols), request.rebalance_timeout_ms,
                            request.session_timeout_ms, None)
        if group.select_protocol() != group.protocol_name:
            future = self._park_join(group, member, request)
            self._maybe_prepare_rebalance(group)
            return future
        try:
            self._store_group(group, {m.member_id: m.assignment for m in group.members.values()})
        except StoreError as exc:
            group.update_member(member, *old, None)
            group.replace_static_member(instance_id, new_member_id,
                                        old_member_id, ErrorCode.FENCED_INSTANCE_ID)
            return JoinResult(exc.error_code, "", group.generation_id, group.protocol_name,
                              previous_leader)
        # The old leader id keeps a restarted leader from computing an
        # assignment a Stable group would ignore (JoinGroup before KIP-814).
        return self._current_generation(group, new_member_id, False, previous_leader)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.is_state(PREPARING):
                self._try_complete_join(group)

    # -- rebalance phases ------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_state(COMPLETING):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        from_empty = group.is_state(EMPTY)
        log.info("group %s preparing to rebalance from %s (generation %d)", group.group_id,
                 group.state.kafka_name, group.generation_id)
        group.transition_to(PREPARING)
        _cancel(group.join_timer)
        loop = asyncio.get_running_loop()
        if from_empty:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group.in_initial_delay = True
            group.join_timer = loop.call_later(delay / 1000, self._initial_delay_expired,
                                               group, delay, remaining)
        else:
            group.in_initial_delay = False
            group.join_timer = loop.call_later(group.rebalance_timeout_ms() / 1000,
                                               self._complete_join, group)
            self._try_complete_join(group)

    def _initial_delay_expired(self, group: GroupMetadata, delay_ms: int, remaining_ms: int) -> None:
        group.join_timer = None
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            next_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            group.join_timer = asyncio.get_running_loop().call_later(
                next_delay / 1000, self._initial_delay_expired, group, next_delay,
                max(remaining_ms - delay_ms, 0))
            return
        group.in_initial_delay = False
        self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (group.is_state(PREPARING) and not group.in_initial_delay
                and group.has_all_members_joined()):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        _cancel(group.join_timer)
        group.join_timer = None
        group.in_initial_delay = False
        if not group.is_state(PREPARING):
            return
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                _cancel(member.heartbeat_timer)
                _resolve(member.sync_future, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait for session timeouts to clear them out.
            group.join_timer = asyncio.get_running_loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._complete_join, group)
            return
        group.init_next_generation()
        if group.is_state(EMPTY):
            try:
                self._store_group(group, {})
            except StoreError as exc:
                log.warning("group %s: cannot record it empty: error %d", group.group_id, exc.error_code)
            return
        log.info("group %s generation %d: %d members, protocol %s, leader %s", group.group_id,
                 group.generation_id, group.size, group.protocol_name, group.leader_id)
        for member in group.members.values():
            result = self._current_generation(group, member.member_id, group.is_leader(member.member_id))
            future, member.join_future = member.join_future, None
            _resolve(future, result)
            self._schedule_heartbeat(group, member)
            member.is_new = False

    # -- SyncGroup -------------------------------------------------------------------
    async def sync_group(self, group_id: str, generation_id: int, member_id: str,
                         group_instance_id: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        if group_id in self.consumer_groups and not self._check_group_id(group_id):
            return self.classic_sync_consumer_group(group_id, generation_id, member_id, group_instance_id)
        outcome = self._sync(group_id, generation_id, member_id, group_instance_id, assignments)
        if isinstance(outcome, SyncResult):
            return outcome
        return await asyncio.shield(outcome)

    def _sync(self, group_id, generation_id, member_id, group_instance_id, assignments):
        error = self._check_group_id(group_id)
        if error:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_state(DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return SyncResult(error)
        if generation_id != group.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if group.is_state(EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_state(PREPARING):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.get(member_id)
        if group.is_state(STABLE):
            self._schedule_heartbeat(group, member)
            return SyncResult(ErrorCode.NONE, member.assignment)
        _resolve(member.sync_future, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        future = member.sync_future = asyncio.get_running_loop().create_future()
        if group.is_leader(member_id):
            self._complete_sync(group, assignments)
        return future

    def _complete_sync(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        """The leader's assignment: record it, then answer every parked SyncGroup."""
        full = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        try:
            self._store_group(group, full)
        except StoreError as exc:
            self._reset_and_propagate_assignment_error(group, exc.error_code)
            self._maybe_prepare_rebalance(group)
            return
        for member_id, member in group.members.items():
            member.assignment = full[member_id]
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition_to(STABLE)
        log.info("group %s generation %d is stable", group.group_id, group.generation_id)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            if member.sync_future is not None:
                future, member.sync_future = member.sync_future, None
                _resolve(future, SyncResult(error, member.assignment if not error else b""))
                self._schedule_heartbeat(group, member)

    def _store_group(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        try:
            self.manager.store_group(group.group_id, group.to_value(assignments))
        except StoreError as exc:
            exc.error_code = _STORE_GROUP_ERRORS.get(exc.error_code, exc.error_code)
            log.warning("group %s: storing metadata failed: error %d %s", group.group_id,
                        exc.error_code, exc)
            raise

    # -- Heartbeat and session timeouts ----------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> int:
        error = self._check_group_id(group_id)
        if error:
            return error
        if group_id in self.consumer_groups:
            return self.classic_heartbeat_consumer_group(group_id, member_id, group_instance_id, generation_id)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_state(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.get(member_id))
        if group.is_state(PREPARING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int | None = None) -> None:
        """Record a sign of life and move the member's deadline. The timer is
        re-armed only when the deadline moves earlier; a timer that fires
        before the deadline re-arms itself, so a heartbeat costs no timer."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        member.latest_heartbeat = now
        member.heartbeat_timeout_ms = timeout_ms or member.session_timeout_ms
        deadline = now + member.heartbeat_timeout_ms / 1000
        timer = member.heartbeat_timer
        if timer is not None and timer.when() <= deadline:
            return
        _cancel(timer)
        member.heartbeat_timer = loop.call_at(deadline, self._heartbeat_timer_fired, group, member)

    def _heartbeat_timer_fired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_timer = None
        if group.members.get(member.member_id) is not member:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline = member.latest_heartbeat + member.heartbeat_timeout_ms / 1000
        # Parked in SyncGroup, or in JoinGroup after having been a member:
        # alive by definition (Kafka's shouldKeepAlive).
        keep_alive = member.is_awaiting_sync or (member.is_awaiting_join and not member.is_new)
        if now < deadline or keep_alive:
            wake = deadline if now < deadline else now + member.session_timeout_ms / 1000
            member.heartbeat_timer = loop.call_at(wake, self._heartbeat_timer_fired, group, member)
            return
        log.info("group %s: member %s timed out, removing it", group.group_id, member.member_id)
        self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        _resolve(member.join_future, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        _resolve(member.sync_future, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_future = member.sync_future = None
        _cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group)
        elif group.is_state(PREPARING):
            self._try_complete_join(group)

    # -- LeaveGroup ------------------------------------------------------------------
    def leave_group(self, group_id: str,
                    members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, one error per (member_id, group_instance_id))."""
        error = self._check_group_id(group_id)
        if error:
            return error, []
        if group_id in self.consumer_groups:
            return self.classic_leave_consumer_group(group_id, members)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_state(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, [self._leave_one(group, member_id, instance_id)
                                for member_id, instance_id in members]

    def _leave_one(self, group: GroupMetadata, member_id: str, group_instance_id: str | None) -> int:
        if member_id == "":
            # Administrative removal of a static member by instance id.
            known = group.static_member_id(group_instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update_group(group, group.get(known))
            return ErrorCode.NONE
        if group.is_pending_member(member_id):
            self._expire_pending_member(group, member_id)
            return ErrorCode.NONE
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return error
        log.info("group %s: member %s left", group.group_id, member_id)
        self._remove_member_and_update_group(group, group.get(member_id))
        return ErrorCode.NONE


def _no_share_group(_group_id: str) -> bool:
    return False


def _close_group(group: GroupMetadata) -> None:
    """Stop a group's timers and answer its parked requests NOT_COORDINATOR."""
    _cancel(group.join_timer)
    for member in group.members.values():
        _cancel(member.heartbeat_timer)
        _resolve(member.join_future, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
        _resolve(member.sync_future, SyncResult(ErrorCode.NOT_COORDINATOR))


def _cancel(timer: asyncio.TimerHandle | None) -> None:
    if timer is not None:
        timer.cancel()


def _resolve(future: asyncio.Future | None, result: Any) -> None:
    if future is not None and not future.done():
        future.set_result(result)

"""Consumer-protocol groups (KIP-848): ConsumerGroupHeartbeat and the timers.

Follows Kafka's GroupMetadataManager.consumerGroupHeartbeat. Each heartbeat:

1. creates or updates the member; a changed subscription (topic names or
   regex), a newly resolved regex, or changed metadata of the subscribed
   topics (partition counts, a topic created or deleted) bumps the group
   epoch;
2. when the group epoch passed the target assignment epoch, runs the
   group's assignor (the one most members ask for with
   group.remote.assignor, else the first of group.consumer.assignors) and
   writes only the members whose target changed;
3. moves the member one step towards its target (consumer_member.py:
   revoke first, then assign what is free).

Every change is a list of records (consumer_records.py) appended to the
group's __consumer_offsets partition as one batch and then replayed into
the group, so memory is always what the log says; the answer waits for
the in-sync replicas. A failed append changes nothing and answers Kafka's
mapped error. Errors: INVALID_REQUEST (malformed heartbeat),
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (an epoch the coordinator does not
accept), UNRELEASED_INSTANCE_ID (an instance id still held by a live
static member), FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED
(group.consumer.max.size), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION,
GROUP_ID_NOT_FOUND (a classic group that cannot be upgraded, or a share
group's id: "Group g is not a consumer group.", as Kafka answers).

Timers (event-loop, monotonic): a session timeout per member
(group.consumer.session.timeout.ms, or a classic member's own), and a
rebalance timeout while a member has partitions to revoke; either fences
the member (its records tombstoned, the group epoch bumped).

ConsumerGroupOperations is a mixin of GroupCoordinator; same concurrency
contract: every state change happens before the first await.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from kcore.clock import wall_ms
from kcore.coordinator.group import consumer_records as records
from kcore.coordinator.group.assignors import ASSIGNORS, Assignment, AssignorError, MemberSpec
from kcore.coordinator.group.consumer_group import (
    ConsumerGroup,
    ConsumerGroupState,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    member_tombstones,
    target_epoch_record,
    target_member_record,
)
from kcore.coordinator.group.consumer_member import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    OwnedPartitions,
    check_member_epoch,
    reconcile,
)
from kcore.coordinator.group.manager import GroupMetadataManager
from kcore.coordinator.group.records import GroupKey
from kcore.coordinator.internal_log import APPEND_ERRORS, StoreError
from kcore.metadata import INTERNAL_TOPICS
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig
    from kcore.coordinator.group.group import GroupMetadata

log = logging.getLogger(__name__)

# ConsumerGroupHeartbeat v1 requires the member id from the client (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_VERSION = 1


# A consumer-group record, or a classic group record where a group changes protocol.
Record = tuple[records.ConsumerGroupKey | GroupKey, Any]


def store_error_code(code: int) -> int:
    return APPEND_ERRORS.get(code, code)


class GroupError(Exception):
    """A heartbeat refused with Kafka error ``code``; nothing was changed."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True)
class HeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass
class _Update:
    """What one heartbeat decided, before it is written; `after` runs once
    it is (a group changing protocol)."""
    group: ConsumerGroup
    records: list[Record]
    created: bool = False
    after: list[Callable[[], None]] = field(default_factory=list)


def validate_heartbeat(request: HeartbeatRequest, assignors: list[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    epoch = request.member_epoch
    if (request.api_version >= CONSUMER_GENERATED_MEMBER_ID_VERSION or epoch > 0
            or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not request.member_id.strip():
        raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if request.instance_id is not None and not request.instance_id.strip():
        raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id.strip():
        raise GroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or any(parts for _, parts in request.owned):
            raise GroupError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if not request.subscribed_topic_names and not request.subscribed_topic_regex:
            raise GroupError(ErrorCode.INVALID_REQUEST,
                             "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise GroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                         f"ServerAssignor {request.server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(assignors)}.")
    if request.subscribed_topic_regex:
        try:
            re2.compile(request.subscribed_topic_regex)
        except re2.error as exc:
            raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex {request.subscribed_topic_regex} is invalid: {exc}") from None


class ConsumerGroupOperations:
    """ConsumerGroupHeartbeat of GroupCoordinator (see module doc)."""

    if TYPE_CHECKING:
        groups: dict[str, GroupMetadata]
        manager: GroupMetadataManager
        config: GroupConfig

        def _check_group_id(self, group_id: str, allow_empty: bool = False) -> int: ...
        def _maybe_upgrade(self, update: _Update) -> ConsumerGroup: ...
        def _maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember,
                             update: _Update) -> bool: ...

    consumer_groups: dict[str, ConsumerGroup]
    share_group_exists: Callable[[str], bool]
    _consumer_timers: dict[tuple[str, str, str], asyncio.TimerHandle]

    # -- ConsumerGroupHeartbeat ------------------------------------------------------
    async def consumer_group_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        if not request.group_id.strip():
            return HeartbeatResult(ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty.")
        error = self._check_group_id(request.group_id)
        if error:
            return HeartbeatResult(error)
        try:
            validate_heartbeat(request, self.config.consumer_assignors)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                update, result = self._leave(request)
            else:
                update, result = self._heartbeat(request)
            replicated = self._write(update)
        except GroupError as exc:
            return HeartbeatResult(exc.code, exc.message, request.member_id or None,
                                   request.member_epoch)
        if replicated is not None:
            try:
                await asyncio.shield(replicated)
            except StoreError as exc:
                return HeartbeatResult(store_error_code(exc.error_code), str(exc) or None)
        return result

    def _heartbeat(self, request: HeartbeatRequest) -> tuple[_Update, HeartbeatResult]:
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        update = self._group_for_heartbeat(request.group_id, joining)
        group = update.group
        self._check_size(group, request.member_id)
        member = self._member_for_heartbeat(update, request)
        updated = member.replace(
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=(request.server_assignor if request.server_assignor is not None
                             else member.server_assignor),
            subscribed_topic_names=(tuple(request.subscribed_topic_names)
                                    if request.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=((request.subscribed_topic_regex or None)
                                    if request.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=request.client_id, client_host=request.client_host, classic=None)
        target_epoch, target = self._update_group(update, member, updated)
        updated = self._reconcile(update, updated, target_epoch, target, request.owned)
        self._schedule_session_timeout(group.group_id, updated.member_id, self.config.consumer_session_timeout_ms)
        full = joining or (request.rebalance_timeout_ms != -1 and request.subscribed_topic_names is not None
                           and request.owned is not None)
        assignment = updated.assigned if full or updated.assigned != member.assigned else None
        return update, HeartbeatResult(ErrorCode.NONE, None, updated.member_id, updated.member_epoch,
                                       self.config.consumer_heartbeat_interval_ms, assignment)

    def _group_for_heartbeat(self, group_id: str, create: bool) -> _Update:
        group = self.consumer_groups.get(group_id)
        if group is not None:
            return _Update(group, [])
        update = _Update(ConsumerGroup(group_id, self.manager.clock), [], created=True)
        if self.share_group_exists(group_id):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group_id in self.groups:
            if not create:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            self._maybe_upgrade(update)
        elif not create:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return update

    def _check_size(self, group: ConsumerGroup, member_id: str) -> None:
        limit = self.config.consumer_max_size
        if group.size >= limit and (not member_id or member_id not in group.members):
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {limit} members.")

    def _member_for_heartbeat(self, update: _Update, request: HeartbeatRequest) -> ConsumerGroupMember:
        group = update.group
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        member_id = request.member_id or str(uuid.uuid4())
        instance_id = request.instance_id
        try:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    if not joining:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {group.group_id}.")
                    log.info("group %s: member %s joins with the consumer protocol", group.group_id, member_id)
                    return ConsumerGroupMember(member_id)
                if not joining:
                    check_member_epoch(member, request.member_epoch, request.owned)
                return member
            return self._static_member(update, member_id, instance_id, request)
        except FencedMemberEpoch as exc:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"{exc}. The member must abandon all its partitions and rejoin.") from None

    def _static_member(self, update: _Update, member_id: str, instance_id: str,
                       request: HeartbeatRequest) -> ConsumerGroupMember:
        group = update.group
        existing = group.static_member(instance_id)
        if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_id == member_id:
                return existing
            if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the "
                                 f"group because the instance id is owned by {existing.member_id} member.")
            replaced = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            update.records += member_tombstones(group.group_id, existing.member_id)
            update.records += [member_metadata_record(group.group_id, replaced),
                               target_member_record(group.group_id, member_id,
                                                    group.target.get(existing.member_id, {})),
                               current_assignment_record(group.group_id, replaced)]
            self._cancel_member_timers(group.group_id, existing.member_id)
            log.info("group %s: static member %s takes over instance %s from %s", group.group_id,
                     member_id, instance_id, existing.member_id)
            return replaced
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {instance_id} was fenced by "
                             f"member {existing.member_id}.")
        check_member_epoch(existing, request.member_epoch, request.owned)
        return existing

    # -- group epoch and target assignment -------------------------------------------
    def _update_group(self, update: _Update, member: ConsumerGroupMember,
                      updated: ConsumerGroupMember) -> tuple[int, Assignment]:
        """Steps 1 and 2 of the module doc; returns the member's (target
        epoch, target assignment)."""
        group = update.group
        group_id = group.group_id
        is_new = member.member_id not in group.members
        if is_new or updated.metadata_key() != member.metadata_key():
            update.records.append(member_metadata_record(group_id, updated))
        members = dict(group.members)
        replaced = group.static_members.get(updated.instance_id) if updated.instance_id else None
        if replaced is not None and replaced != updated.member_id:
            members.pop(replaced, None)
        members[updated.member_id] = updated
        # A static member taking over an instance keeps its subscription:
        # no new epoch, no rebalance.
        bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        bump = self._resolve_regexes(update, members) or bump
        metadata_hash = group.metadata_hash
        version = self.manager.metadata_version
        if bump or group.metadata_version != version:
            metadata_hash = self._metadata_hash(group.subscribed_topic_names(members) | _new_regex_topics(update))
            # Remembered once written: a failed write computes it again.
            update.after.append(lambda: setattr(group, "metadata_version", version))
            bump = bump or metadata_hash != group.metadata_hash
        group_epoch = group.group_epoch
        if bump:
            group_epoch += 1
            update.records.append(group_epoch_record(group_id, group_epoch, metadata_hash))
            log.info("group %s: group epoch %d", group_id, group_epoch)
        if group_epoch > group.assignment_epoch:
            targets = self._compute_target(update, members, group_epoch)
            return group_epoch, targets.get(updated.member_id, {})
        return group.assignment_epoch, group.target_of(updated.member_id, updated.instance_id)

    def _resolve_regexes(self, update: _Update, members: dict[str, ConsumerGroupMember]) -> bool:
        """Resolve the regexes in use against the topic names when the
        metadata moved (RE2 syntax, whole-name match, internal topics left
        out); tombstone the ones no member uses. True when a resolution changed."""
        group = update.group
        version = self.manager.metadata_version
        changed = False
        in_use = group.regexes_in_use(members)
        names: list[str] | None = None
        for regex in sorted(in_use):
            resolved = group.resolved_regexes.get(regex)
            if resolved is not None and resolved.version == version:
                continue
            if names is None:
                names = [n for n in self.manager.topic_names() if n not in INTERNAL_TOPICS]
            pattern = re2.compile(regex)
            topics = sorted(n for n in names if pattern.fullmatch(n))
            if resolved is None or set(topics) != resolved.topics:
                changed = True
            update.records.append((records.ConsumerGroupKey(records.REGULAR_EXPRESSION, group.group_id,
                                                            regular_expression=regex),
                                   records.value(records.REGULAR_EXPRESSION, topics=topics,
                                                 version=version, timestamp=wall_ms(self.manager.clock))))
        for regex in sorted(set(group.resolved_regexes) - in_use):
            update.records.append((records.ConsumerGroupKey(records.REGULAR_EXPRESSION, group.group_id,
                                                            regular_expression=regex), None))
        return changed

    def _metadata_hash(self, topic_names: set[str]) -> int:
        """A signed 64-bit digest of (name, id, partition count) of the
        subscribed topics that exist (see consumer_records' module doc)."""
        digest = hashlib.blake2b(digest_size=8)
        for name in sorted(topic_names):
            metadata = self.manager.topic_metadata(name)
            if metadata is not None:
                digest.update(f"{name}\0{metadata[0]}\0{metadata[1]}\n".encode())
        return int.from_bytes(digest.digest(), "big", signed=True)

    def _topic_ids(self, names: set[str]) -> dict[str, tuple[uuid.UUID, int]]:
        out = {}
        for name in names:
            metadata = self.manager.topic_metadata(name)
            if metadata is not None and metadata[1] > 0:
                out[name] = metadata
        return out

    def _compute_target(self, update: _Update, members: dict[str, ConsumerGroupMember],
                        group_epoch: int) -> dict[str, Assignment]:
        group = update.group
        topics = self._topic_ids(group.subscribed_topic_names(members) | _new_regex_topics(update))
        specs = {}
        for member_id, member in members.items():
            names = _member_topics(update, member)
            previous = group.target.get(member_id)
            if previous is None and member.instance_id is not None:
                previous = group.target_of(member_id, member.instance_id)
            specs[member_id] = MemberSpec(frozenset(topics[n][0] for n in names if n in topics),
                                          member.instance_id, previous or {})
        name = group.preferred_assignor(members) or self.config.consumer_assignors[0]
        try:
            targets = ASSIGNORS[name].assign(specs, {t_id: count for t_id, count in topics.values()})
        except AssignorError as exc:
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from None
        for member_id, assignment in targets.items():
            if group.target.get(member_id) != assignment or member_id not in group.target:
                update.records.append(target_member_record(group.group_id, member_id, assignment))
        for member_id in set(group.target) - set(targets):
            if member_id in group.members and member_id not in members:
                continue  # a replaced static member: its tombstone is written already
            update.records.append((records.ConsumerGroupKey(records.TARGET_ASSIGNMENT_MEMBER,
                                                            group.group_id, member_id), None))
        update.records.append(target_epoch_record(group.group_id, group_epoch))
        log.info("group %s: target assignment of epoch %d by %s for %d members", group.group_id,
                 group_epoch, name, len(members))
        return targets

    def _reconcile(self, update: _Update, member: ConsumerGroupMember, target_epoch: int,
                   target: Assignment, owned: OwnedPartitions | None) -> ConsumerGroupMember:
        if member.is_reconciled_to(target_epoch):
            if member.member_id not in update.group.members:
                update.records.append(current_assignment_record(update.group.group_id, member))
            return member
        group = update.group
        topics = self._topic_ids(_member_topics(update, member))
        try:
            updated = reconcile(member, target_epoch, target, group.partition_epoch, owned,
                                frozenset(t_id for t_id, _ in topics.values()))
        except FencedMemberEpoch as exc:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from None
        if updated != member or member.member_id not in group.members:
            update.records.append(current_assignment_record(group.group_id, updated))
            if not updated.uses_classic_protocol:
                if updated.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, updated)
                else:
                    self._cancel_timer(group.group_id, updated.member_id, "rebalance")
        return updated

    # -- leaving and fencing ---------------------------------------------------------
    def _leave(self, request: HeartbeatRequest) -> tuple[_Update, HeartbeatResult]:
        group = self.consumer_groups.get(request.group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        result = HeartbeatResult(ErrorCode.NONE, None, request.member_id, request.member_epoch)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {request.member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {request.member_id} with instance id {request.instance_id} "
                                 f"was fenced by member {member.member_id}.")
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("group %s: static member %s left for now", group.group_id, member.member_id)
                leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
                return _Update(group, [current_assignment_record(group.group_id, leaving)]), result
        log.info("group %s: member %s left", group.group_id, member.member_id)
        return self._fence_records(group, member), result

    def _fence_records(self, group: ConsumerGroup, member: ConsumerGroupMember) -> _Update:
        """Kafka's consumerGroupFenceMember: the member's tombstones and a
        group epoch bump (or the downgrade to a classic group)."""
        update = _Update(group, [])
        self._cancel_member_timers(group.group_id, member.member_id)
        if self._maybe_downgrade(group, member, update):
            return update
        update.records += member_tombstones(group.group_id, member.member_id)
        remaining = {m: v for m, v in group.members.items() if m != member.member_id}
        self._resolve_regexes(update, remaining)
        metadata_hash = self._metadata_hash(group.subscribed_topic_names(remaining))
        update.records.append(group_epoch_record(group.group_id, group.group_epoch + 1, metadata_hash))
        return update

    def fence_consumer_member(self, group_id: str, member_id: str, reason: str,
                              epoch: int | None = None) -> None:
        """Remove a member whose session or rebalance timed out (a timer
        callback: failures are logged, the next timeout tries again)."""
        group = self.consumer_groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return
        log.info("group %s: member %s fenced because %s", group_id, member_id, reason)
        try:
            self._write(self._fence_records(group, member))
        except GroupError as exc:
            log.warning("group %s: fencing %s failed: %s", group_id, member_id, exc.message)
            self._schedule_session_timeout(group_id, member_id, self.config.consumer_session_timeout_ms)

    # -- writing ---------------------------------------------------------------------
    def _write(self, update: _Update) -> asyncio.Future | None:
        """Append the update's records, then replay them into the group."""
        group = update.group
        replicated = None
        try:
            if update.records:
                replicated = self.manager.store_consumer_records(group.group_id, update.records)
        except StoreError as exc:
            raise GroupError(store_error_code(exc.error_code), str(exc)) from None
        if update.records and (update.created or group.group_id not in self.consumer_groups):
            self.consumer_groups[group.group_id] = group
        for key, value in update.records:
            if isinstance(key, records.ConsumerGroupKey):
                group.replay(key, value)
        if group.state is ConsumerGroupState.DEAD:
            self.consumer_groups.pop(group.group_id, None)
        for action in update.after:
            action()
        return replicated

    # -- timers ----------------------------------------------------------------------
    def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._schedule(group_id, member_id, "session", timeout_ms, self.fence_consumer_member,
                       group_id, member_id, "its session expired")

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        self._schedule(group_id, member.member_id, "rebalance", max(member.rebalance_timeout_ms, 0),
                       self.fence_consumer_member, group_id, member.member_id,
                       f"it did not revoke its partitions within {member.rebalance_timeout_ms} ms",
                       member.member_epoch)

    def _schedule(self, group_id: str, member_id: str, kind: str, delay_ms: int, callback, *args) -> None:
        self._cancel_timer(group_id, member_id, kind)
        self._consumer_timers[(group_id, member_id, kind)] = asyncio.get_running_loop().call_later(
            delay_ms / 1000, self._fire, (group_id, member_id, kind), callback, args)

    def _fire(self, key: tuple[str, str, str], callback, args) -> None:
        self._consumer_timers.pop(key, None)
        callback(*args)

    def _cancel_timer(self, group_id: str, member_id: str, kind: str) -> None:
        timer = self._consumer_timers.pop((group_id, member_id, kind), None)
        if timer is not None:
            timer.cancel()

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("session", "rebalance", "join", "sync"):
            self._cancel_timer(group_id, member_id, kind)

    def _cancel_group_timers(self, group_id: str) -> None:
        for key in [key for key in self._consumer_timers if key[0] == group_id]:
            self._consumer_timers.pop(key).cancel()

    def _start_consumer_group_timers(self, group: ConsumerGroup) -> None:
        """After a load: every member gets a fresh session, and one with
        partitions to revoke its rebalance timeout (Kafka's onLoaded)."""
        for member in group.members.values():
            timeout = (member.classic.session_timeout_ms if member.classic is not None
                       else self.config.consumer_session_timeout_ms)
            self._schedule_session_timeout(group.group_id, member.member_id, timeout)
            if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                self._schedule_rebalance_timeout(group.group_id, member)


def _member_topics(update: _Update, member: ConsumerGroupMember) -> set[str]:
    """A member's topic names with its regex as this update resolves it."""
    regex = member.subscribed_topic_regex
    if regex is not None:
        for key, value in reversed(update.records):
            if (isinstance(key, records.ConsumerGroupKey) and key.type == records.REGULAR_EXPRESSION
                    and key.regular_expression == regex):
                if value is not None:
                    return set(member.subscribed_topic_names) | set(value.topics)
                break
    return update.group.member_topic_names(member)


def _new_regex_topics(update: _Update) -> set[str]:
    """Topics of regexes resolved by this update (not replayed yet)."""
    topics: set[str] = set()
    for key, value in update.records:
        if isinstance(key, records.ConsumerGroupKey) and key.type == records.REGULAR_EXPRESSION \
                and value is not None:
            topics.update(value.topics)
    return topics

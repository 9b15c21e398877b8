"""The share-group side of the group coordinator (KIP-932): membership
through ShareGroupHeartbeat, ShareGroupDescribe, the share groups of
ListGroups, and deletion.

A share group's coordinator is the coordinator of any group with its id:
the leader of its ``__consumer_offsets`` partition (the classic
coordinator decides, ``GroupCoordinator.owned_partitions``). A group id
that names a classic group is not a share group: GROUP_ID_NOT_FOUND.

Heartbeats (Kafka's GroupMetadataManager.shareGroupHeartbeat):
- member_epoch 0 joins (the client chose the member id; it must not be
  empty, and the first heartbeat must name the subscribed topics),
  -1 leaves, anything else must be the member's current epoch
  (FENCED_MEMBER_EPOCH) of a known member (UNKNOWN_MEMBER_ID);
- a change of members or subscriptions moves the group epoch and the
  assignment is computed again (group.py, the simple assignor); a member
  takes the new epoch and its assignment on its next heartbeat (share
  groups revoke nothing: a partition may be read by several members);
- the assignment is answered when it differs from the one last sent;
- a member silent for ``share.session.timeout.ms`` is removed.

Membership lives in memory: after a coordinator moves, members get
UNKNOWN_MEMBER_ID and join again with epoch 0 (the records they had
acquired are released when their locks expire). What the group consumed
is in ``__share_group_state``, which does survive.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.coordinator.share.group import ASSIGNOR_NAME, ShareGroup, ShareMember
from kcore.coordinator.share.group_configs import (
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    ShareGroupConfigs,
)
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.topic_ids import TopicIds

log = logging.getLogger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
# Kafka's cap on a member id (it is a client-made UUID; 36 characters).
MAX_MEMBER_ID_LENGTH = 36


class ShareHeartbeatError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class ShareGroupCoordinator:
    def __init__(self, classic: GroupCoordinator, metadata_cache: MetadataCache, topic_ids: TopicIds,
                 configs: ShareGroupConfigs) -> None:
        self.classic = classic
        self.metadata_cache = metadata_cache
        self.topic_ids = topic_ids
        self.configs = configs
        self.groups: dict[str, ShareGroup] = {}
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    # -- checks --------------------------------------------------------------------------
    def check_group(self, group_id: str | None) -> int:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if not self.classic.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.classic.manager.partition_for(group_id) not in self.classic.owned_partitions:
            return ErrorCode.NOT_COORDINATOR
        classic = self.classic.groups.get(group_id)
        # A group id is one group's: a classic group with members or a
        # consumer-protocol group is not a share group (Kafka answers
        # GROUP_ID_NOT_FOUND, "not a share group").
        if (classic is not None and classic.members) or group_id in self.classic.consumer_groups:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return ErrorCode.NONE

    def owns(self, group_id: str) -> bool:
        return self.classic.manager.partition_for(group_id) in self.classic.owned_partitions

    # -- ShareGroupHeartbeat -------------------------------------------------------------
    def heartbeat(self, body, client_id: str, client_host: str) -> dict[str, Any]:
        group_id = body.group_id
        code = self.check_group(group_id)
        if code != ErrorCode.NONE:
            return _error(code, _check_message(code, group_id))
        try:
            member, group = self._member(body, client_id, client_host)
        except ShareHeartbeatError as exc:
            return _error(exc.error_code, str(exc))
        interval = int(self.configs.effective(group_id)[HEARTBEAT_INTERVAL_MS])
        if member is None:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                    "member_id": body.member_id, "member_epoch": LEAVE_EPOCH,
                    "heartbeat_interval_ms": 0, "assignment": None}
        self._reassign_if_needed(group)
        member.member_epoch = group.assignment_epoch
        assignment = None
        if member.sent_assignment != member.assignment:
            member.sent_assignment = {topic_id: list(indexes)
                                      for topic_id, indexes in member.assignment.items()}
            assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": sorted(indexes)}
                                               for topic_id, indexes in member.assignment.items()]}
        self._schedule_expiry(group, member)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                "member_id": member.member_id, "member_epoch": member.member_epoch,
                "heartbeat_interval_ms": interval, "assignment": assignment}

    def _member(self, body, client_id: str, client_host: str) -> tuple[ShareMember | None, ShareGroup]:
        """The member after this heartbeat (None once it left), raising
        ShareHeartbeatError for Kafka's refusals; nothing changes on one."""
        member_id = body.member_id
        if not member_id or len(member_id) > MAX_MEMBER_ID_LENGTH:
            raise ShareHeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId must be a non-empty "
                                      f"string of at most {MAX_MEMBER_ID_LENGTH} characters.")
        epoch = body.member_epoch
        group = self.groups.get(body.group_id)
        if epoch == JOIN_EPOCH:
            if not body.subscribed_topic_names and (group is None or member_id not in group.members):
                raise ShareHeartbeatError(ErrorCode.INVALID_REQUEST,
                                          "SubscribedTopicNames must be set in first request.")
            if group is None:
                group = self.groups[body.group_id] = ShareGroup(body.group_id)
            if member_id not in group.members and len(group.members) >= self.configs.defaults.max_size:
                raise ShareHeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                          f"The share group has reached its maximum capacity of "
                                          f"{self.configs.defaults.max_size} members.")
            member = group.members.get(member_id)
            if member is None:
                member = group.members[member_id] = ShareMember(member_id)
                group.bump_epoch()
                log.info("member %s joined share group %s", member_id, group.group_id)
            member.sent_assignment = None  # a (re)joining member is sent its assignment
        else:
            member = group.members.get(member_id) if group is not None else None
            if group is None or member is None:
                raise ShareHeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                          f"Member {member_id} is not a member of group {body.group_id}.")
            if epoch == LEAVE_EPOCH:
                self._remove(group, member_id)
                return None, group
            if epoch != member.member_epoch:
                raise ShareHeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                          f"The share group member has a member epoch ({epoch}) that "
                                          f"does not match the current one ({member.member_epoch}).")
        self._update(group, member, body, client_id, client_host)
        return member, group

    def _update(self, group: ShareGroup, member: ShareMember, body, client_id: str,
                client_host: str) -> None:
        member.client_id, member.client_host = client_id, client_host
        if body.rack_id is not None:
            member.rack_id = body.rack_id
        topics = body.subscribed_topic_names
        if topics is not None and sorted(topics) != sorted(member.subscribed_topic_names):
            member.subscribed_topic_names = sorted(set(topics))
            group.bump_epoch()

    def _reassign_if_needed(self, group: ShareGroup) -> None:
        """A new group epoch, or a subscribed topic created or grown since
        the assignment: compute it again."""
        partitions_of = self._partitions_of(group.subscribed_topics())
        current: dict[uuid.UUID, set[int]] = {topic_id: set() for topic_id, _count in partitions_of.values()}
        for member in group.members.values():
            for topic_id, indexes in member.assignment.items():
                current.setdefault(topic_id, set()).update(indexes)
        covered = all(current.get(topic_id) == set(range(count))
                      for topic_id, count in partitions_of.values())
        if group.assignment_epoch != group.group_epoch or not covered:
            if group.assignment_epoch == group.group_epoch:
                group.bump_epoch()
            group.assign(partitions_of)

    def _partitions_of(self, topics: set[str]) -> dict[str, tuple[uuid.UUID, int]]:
        found = {}
        for topic in topics:
            partitions = self.metadata_cache.partitions(topic)
            if partitions:
                found[topic] = (self.topic_ids.id_of(topic), len(partitions))
        return found

    # -- leaving and expiry --------------------------------------------------------------
    def _remove(self, group: ShareGroup, member_id: str) -> None:
        group.members.pop(member_id, None)
        timer = self._timers.pop((group.group_id, member_id), None)
        if timer is not None:
            timer.cancel()
        group.bump_epoch()
        # Its records stay acquired until its share sessions close or their
        # locks expire, as in Kafka: a leave may come before the last
        # acknowledgements.
        log.info("member %s left share group %s", member_id, group.group_id)

    def _schedule_expiry(self, group: ShareGroup, member: ShareMember) -> None:
        key = (group.group_id, member.member_id)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        timeout_s = int(self.configs.effective(group.group_id)[SESSION_TIMEOUT_MS]) / 1000
        self._timers[key] = asyncio.get_running_loop().call_later(
            timeout_s, self._expire, group.group_id, member.member_id)

    def _expire(self, group_id: str, member_id: str) -> None:
        self._timers.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            log.info("member %s of share group %s expired: no heartbeat within the session timeout",
                     member_id, group_id)
            self._remove(group, member_id)

    def on_coordinator_moved(self) -> None:
        """Groups whose ``__consumer_offsets`` partition this broker no
        longer leads are dropped (their members find the new coordinator)."""
        for group_id in [group_id for group_id in self.groups if not self.owns(group_id)]:
            group = self.groups.pop(group_id)
            for member_id in list(group.members):
                timer = self._timers.pop((group_id, member_id), None)
                if timer is not None:
                    timer.cancel()

    # -- describe / list / delete --------------------------------------------------------
    def describe(self, group_id: str) -> dict[str, Any]:
        code = self.check_group(group_id)
        group = self.groups.get(group_id) if code == ErrorCode.NONE else None
        if code == ErrorCode.NONE and (group is None or group.dead):
            code = ErrorCode.GROUP_ID_NOT_FOUND
        if group is None or code != ErrorCode.NONE:
            return {"error_code": code, "error_message": None, "group_id": group_id,
                    "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1,
                    "assignor_name": "", "members": [], "authorized_operations": -0x80000000}
        self._reassign_if_needed(group)
        return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
                "group_state": group.state.value, "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch, "assignor_name": ASSIGNOR_NAME,
                "members": [self._describe_member(member) for member in group.members.values()],
                "authorized_operations": -0x80000000}

    def _describe_member(self, member: ShareMember) -> dict[str, Any]:
        return {"member_id": member.member_id, "rack_id": member.rack_id,
                "member_epoch": member.member_epoch, "client_id": member.client_id,
                "client_host": member.client_host,
                "subscribed_topic_names": list(member.subscribed_topic_names),
                "assignment": {"topic_partitions": [
                    {"topic_id": topic_id, "topic_name": self.topic_ids.name_of(topic_id) or "",
                     "partitions": sorted(indexes)}
                    for topic_id, indexes in member.assignment.items()]}}

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of the share groups this broker coordinates."""
        return [(group_id, group.state.value) for group_id, group in sorted(self.groups.items())
                if not group.dead and self.owns(group_id)]

    def is_share_group(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and not group.dead

    def remember(self, group_id: str) -> ShareGroup:
        """A group known from its persisted state (an empty share group
        after a restart), so that describe and delete find it."""
        group = self.groups.get(group_id)
        if group is None or group.dead:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def forget(self, group_id: str) -> int:
        """DeleteGroups of a share group: NON_EMPTY_GROUP while it has members."""
        group = self.groups.get(group_id)
        if group is None or group.dead:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        group.dead = True
        del self.groups[group_id]
        return ErrorCode.NONE

    def shutdown(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


def _error(code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


def _check_message(code: int, group_id: str) -> str | None:
    if code == ErrorCode.NOT_COORDINATOR:
        return "this broker does not coordinate the group"
    if code == ErrorCode.GROUP_ID_NOT_FOUND:
        return f"Group {group_id} is not a share group."
    return None

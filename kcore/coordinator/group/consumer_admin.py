"""Consumer-protocol groups seen by admin requests: ConsumerGroupDescribe,
the removal of their offsets and of the groups themselves.

ConsumerGroupDescribe (Kafka's ConsumerGroup.asDescribedGroup): the state,
group epoch, target assignment epoch, the assignor most members ask for
(else the default), and per member its epoch, subscription, current and
target assignment (topic ids with their names) and type (classic or
consumer protocol). A group that does not exist, or is a classic group,
answers GROUP_ID_NOT_FOUND.

Offsets of a consumer group go as in a classic group (tombstones); an
Empty consumer group left without offsets is deleted: its records are
tombstoned (ConsumerGroup.tombstones) and it leaves the coordinator.

ConsumerGroupAdmin is a mixin of GroupCoordinator; same concurrency contract.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kcore.coordinator.group.assignors import Assignment
from kcore.coordinator.group.consumer_group import ConsumerGroup
from kcore.coordinator.group.consumer_member import CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE
from kcore.coordinator.group.manager import GroupMetadataManager
from kcore.coordinator.internal_log import StoreError
from kcore.metadata import TopicPartition
from kcore.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kcore.coordinator.group.coordinator import GroupConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    # (topic id, topic name, partitions)
    assignment: list[tuple[uuid.UUID, str, list[int]]]
    target_assignment: list[tuple[uuid.UUID, str, list[int]]]
    member_type: int


@dataclass(frozen=True)
class DescribedConsumerGroup:
    error_code: int
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedMember] = field(default_factory=list)


class ConsumerGroupAdmin:
    """Admin side of consumer-protocol groups (see module doc)."""

    if TYPE_CHECKING:
        consumer_groups: dict[str, ConsumerGroup]
        manager: GroupMetadataManager
        config: GroupConfig

        def _check_group_id(self, group_id: str, allow_empty: bool = False) -> int: ...
        def _cancel_group_timers(self, group_id: str) -> None: ...

    def consumer_group_describe(self, group_id: str) -> DescribedConsumerGroup:
        error = self._check_group_id(group_id)
        if error:
            return DescribedConsumerGroup(error)
        group = self.consumer_groups.get(group_id)
        if group is None:
            return DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        members = [DescribedMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            list(m.subscribed_topic_names), m.subscribed_topic_regex, self._named(m.assigned),
            self._named(group.target.get(m.member_id, {})),
            CLASSIC_MEMBER_TYPE if m.uses_classic_protocol else CONSUMER_MEMBER_TYPE)
            for m in group.members.values()]
        assignor = group.preferred_assignor(group.members) or self.config.consumer_assignors[0]
        return DescribedConsumerGroup(ErrorCode.NONE, None, group.state.kafka_name, group.group_epoch,
                                      group.assignment_epoch, assignor, members)

    def _named(self, assignment: Assignment) -> list[tuple[uuid.UUID, str, list[int]]]:
        return [(topic_id, self.manager.topic_name(topic_id) or "", sorted(parts))
                for topic_id, parts in sorted(assignment.items(), key=lambda item: str(item[0]))]

    def _cleanup_consumer_group(self, group: ConsumerGroup, offsets: list[TopicPartition],
                                delete: bool = False) -> None:
        """Drop `offsets` (tombstones); an Empty group left with none (or
        asked to be deleted) is removed with its records."""
        for key in offsets:
            group.offsets.pop(key, None)
        dead = (delete or not group.offsets) and group.is_empty() and not group.pending_txn_offsets
        entries: list = []
        if dead:
            self.consumer_groups.pop(group.group_id, None)
            self._cancel_group_timers(group.group_id)
            log.info("consumer group %s deleted", group.group_id)
        if not offsets and not dead:
            return
        try:
            self.manager.tombstones(group.group_id, list(offsets), include_group=False)
            if dead:
                entries = group.tombstones()
                self.manager.store_consumer_records(group.group_id, entries)
        except StoreError as exc:
            log.warning("group %s: writing tombstones failed: error %d %s", group.group_id,
                        exc.error_code, exc)

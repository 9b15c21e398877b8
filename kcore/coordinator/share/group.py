"""A share group and its members (KIP-932; Kafka's ``ShareGroup`` and
``ShareGroupMember``), and the simple assignor that gives members their
partitions.

States (Kafka's ShareGroupState): EMPTY (no members), STABLE (members,
every one at the group's epoch... share groups have no revocation, so a
member takes a new assignment on its next heartbeat), DEAD (deleted).
The group epoch moves on every change of membership or subscriptions; the
assignment epoch is the group epoch the target assignment was computed at.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

# Kafka's group.share.assignors default names this class; describe reports it.
ASSIGNOR_NAME = "simple"


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


Assignment = dict[uuid.UUID, list[int]]


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    assignment: Assignment = field(default_factory=dict)
    # The assignment this member was last sent (None: never).
    sent_assignment: Assignment | None = None


class ShareGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareMember] = {}
        self.dead = False
        # Every share-partition ever assigned: the state to delete with the group.
        self.assigned_ever: set[tuple[uuid.UUID, int]] = set()

    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topics(self) -> set[str]:
        return {topic for member in self.members.values() for topic in member.subscribed_topic_names}

    def bump_epoch(self) -> None:
        self.group_epoch += 1

    def assign(self, partitions_of: Mapping[str, tuple[uuid.UUID, int]]) -> None:
        """Recompute every member's assignment at the group epoch;
        ``partitions_of`` maps each subscribed topic that exists to (id,
        partition count)."""
        target = simple_assign({member.member_id: member.subscribed_topic_names
                                for member in self.members.values()}, partitions_of)
        for member_id, member in self.members.items():
            member.assignment = target.get(member_id, {})
            for topic_id, indexes in member.assignment.items():
                self.assigned_ever.update((topic_id, index) for index in indexes)
        self.assignment_epoch = self.group_epoch


def simple_assign(subscriptions: Mapping[str, list[str]],
                  partitions_of: Mapping[str, tuple[uuid.UUID, int]]) -> dict[str, Assignment]:
    """Every partition of a subscribed topic goes to at least one of its
    subscribers, and a partition is shared only when a topic has more
    subscribers than partitions (Kafka's SimpleAssignor for share groups):
    with members M (sorted by id) and partitions P of one topic, partition
    i goes to member i mod |M| when |M| <= |P|, and member j gets
    partition j mod |P| otherwise. Four members of a one-partition topic
    all get partition 0."""
    result: dict[str, Assignment] = {member_id: {} for member_id in subscriptions}
    for topic, (topic_id, count) in sorted(partitions_of.items()):
        members = sorted(member_id for member_id, topics in subscriptions.items() if topic in topics)
        if not members or count <= 0:
            continue
        if len(members) <= count:
            for index in range(count):
                result[members[index % len(members)]].setdefault(topic_id, []).append(index)
        else:
            for position, member_id in enumerate(members):
                result[member_id].setdefault(topic_id, []).append(position % count)
    return result

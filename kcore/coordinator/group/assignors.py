"""Server-side assignors of consumer-protocol groups (KIP-848): `uniform`
and `range`, as Kafka's group coordinator names them.

An assignor maps every member to the partitions it should own (the target
assignment), given each member's subscribed topic ids, the partition count
of every subscribed topic, and the previous target assignment. Topics are
named by id; partitions are ints. Pure functions: no I/O, no clock.

- uniform (Kafka's UniformAssignor, the default): balanced and sticky.
  When every member subscribes to the same topics (homogeneous), each
  member's quota is total // members, and total % members of them get one
  more; members keep what they had up to their quota, and only the
  surplus and the unowned partitions move. The extra partitions go to the
  members that already hold the most, so a join moves nothing but the
  newcomer's share. With different subscriptions (heterogeneous), members
  keep what they still subscribe to, unowned partitions go to the least
  loaded subscriber, then single partitions move from a member to a
  subscriber with two or more fewer until none can.
- range (Kafka's RangeAssignor): per topic, consecutive ranges of
  partitions in member order (static members first by instance id, then
  the others by member id), the first partitions % members members getting
  one more; with identical subscriptions and partition counts every member
  gets the same partition numbers of each topic (co-partitioning).
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

Assignment = dict[uuid.UUID, frozenset[int]]

UNIFORM = "uniform"
RANGE = "range"


class AssignorError(Exception):
    """The assignment cannot be computed (a member subscribes to a topic
    that the topic metadata does not have)."""


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of one member."""
    subscribed_topic_ids: frozenset[uuid.UUID]
    instance_id: str | None = None
    # The member's previous target assignment.
    assignment: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


class Assignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]: ...


def _check_topics(members: Mapping[str, MemberSpec], partitions: Mapping[uuid.UUID, int]) -> None:
    for member_id, spec in members.items():
        missing = spec.subscribed_topic_ids - partitions.keys()
        if missing:
            raise AssignorError(f"member {member_id} subscribes to unknown topic ids {sorted(map(str, missing))}")


def _freeze(assignment: Mapping[uuid.UUID, set[int]]) -> Assignment:
    return {topic_id: frozenset(parts) for topic_id, parts in assignment.items() if parts}


def is_homogeneous(members: Mapping[str, MemberSpec]) -> bool:
    subscriptions = {spec.subscribed_topic_ids for spec in members.values()}
    return len(subscriptions) <= 1


class UniformAssignor:
    name = UNIFORM

    def assign(self, members: Mapping[str, MemberSpec],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        if not members:
            return {}
        _check_topics(members, partitions)
        if is_homogeneous(members):
            return _uniform_homogeneous(members, partitions)
        return _uniform_heterogeneous(members, partitions)


def _kept(spec: MemberSpec, partitions: Mapping[uuid.UUID, int]) -> list[tuple[uuid.UUID, int]]:
    """The member's previous partitions it may keep: subscribed topics,
    partitions that still exist, in a stable order."""
    kept = []
    for topic_id in sorted(spec.assignment, key=str):
        if topic_id not in spec.subscribed_topic_ids:
            continue
        count = partitions[topic_id]
        kept += [(topic_id, p) for p in sorted(spec.assignment[topic_id]) if p < count]
    return kept


def _uniform_homogeneous(members: Mapping[str, MemberSpec],
                         partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    topic_ids = sorted(next(iter(members.values())).subscribed_topic_ids, key=str)
    total = sum(partitions[t] for t in topic_ids)
    quota, extra = divmod(total, len(members))
    kept = {member_id: _kept(spec, partitions) for member_id, spec in members.items()}
    # Members holding the most get the extra partitions first: fewest moves.
    order = sorted(members, key=lambda m: (-len(kept[m]), m))
    owned: set[tuple[uuid.UUID, int]] = set()
    result: dict[str, dict[uuid.UUID, set[int]]] = {}
    room: dict[str, int] = {}
    for member_id in order:
        limit = quota + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        mine = [tp for tp in kept[member_id] if tp not in owned][:limit]
        owned.update(mine)
        result[member_id] = {}
        for topic_id, partition in mine:
            result[member_id].setdefault(topic_id, set()).add(partition)
        room[member_id] = limit - len(mine)
    free = [(t, p) for t in topic_ids for p in range(partitions[t]) if (t, p) not in owned]
    position = 0
    for member_id in order:
        for topic_id, partition in free[position:position + room[member_id]]:
            result[member_id].setdefault(topic_id, set()).add(partition)
        position += room[member_id]
    if position < len(free):
        raise AssignorError("partitions were left unassigned")
    return {member_id: _freeze(assignment) for member_id, assignment in result.items()}


def _uniform_heterogeneous(members: Mapping[str, MemberSpec],
                           partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    owner: dict[tuple[uuid.UUID, int], str] = {}
    load = dict.fromkeys(members, 0)
    for member_id in sorted(members):
        for tp in _kept(members[member_id], partitions):
            if tp not in owner:
                owner[tp] = member_id
                load[member_id] += 1
    subscribers = {t: sorted(m for m, s in members.items() if t in s.subscribed_topic_ids)
                   for t in partitions}
    # Topics with the fewest subscribers first: they have the fewest choices.
    for topic_id in sorted(partitions, key=lambda t: (len(subscribers[t]), str(t))):
        if not subscribers[topic_id]:
            continue
        for partition in range(partitions[topic_id]):
            if (topic_id, partition) not in owner:
                member_id = min(subscribers[topic_id], key=lambda m: (load[m], m))
                owner[(topic_id, partition)] = member_id
                load[member_id] += 1
    _balance(owner, load, subscribers)
    result: dict[str, dict[uuid.UUID, set[int]]] = {member_id: {} for member_id in members}
    for (topic_id, partition), member_id in owner.items():
        result[member_id].setdefault(topic_id, set()).add(partition)
    return {member_id: _freeze(assignment) for member_id, assignment in result.items()}


def _balance(owner: dict[tuple[uuid.UUID, int], str], load: dict[str, int],
             subscribers: dict[uuid.UUID, list[str]]) -> None:
    """Move single partitions to a subscriber holding two or more fewer
    until no such move exists; each move lowers the sum of squared loads,
    so the loop ends (bounded besides by the partition count squared)."""
    for _ in range(len(owner) * len(owner) + 1):
        moved = False
        for tp in sorted(owner, key=lambda item: (-load[owner[item]], str(item[0]), item[1])):
            current = owner[tp]
            target = min(subscribers[tp[0]], key=lambda m: (load[m], m))
            if load[target] + 1 < load[current]:
                owner[tp] = target
                load[current] -= 1
                load[target] += 1
                moved = True
        if not moved:
            return


class RangeAssignor:
    name = RANGE

    def assign(self, members: Mapping[str, MemberSpec],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        if not members:
            return {}
        _check_topics(members, partitions)
        order = sorted(members, key=lambda m: (members[m].instance_id is None,
                                               members[m].instance_id or m))
        result: dict[str, dict[uuid.UUID, set[int]]] = {member_id: {} for member_id in members}
        for topic_id, count in partitions.items():
            subscribed = [m for m in order if topic_id in members[m].subscribed_topic_ids]
            if not subscribed:
                continue
            quota, extra = divmod(count, len(subscribed))
            start = 0
            for index, member_id in enumerate(subscribed):
                end = start + quota + (1 if index < extra else 0)
                if end > start:
                    result[member_id][topic_id] = set(range(start, end))
                start = end
        return {member_id: _freeze(assignment) for member_id, assignment in result.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: UniformAssignor(), RANGE: RangeAssignor()}

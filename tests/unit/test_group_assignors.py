"""The server-side assignors of consumer-protocol groups (uniform, range),
checked for what Kafka promises of them: every partition of a subscribed
topic owned exactly once, only by a subscriber, balanced, and for uniform
sticky (a join moves only the newcomer's share)."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcore.coordinator.group.assignors import (
    AssignorError,
    MemberSpec,
    RangeAssignor,
    UniformAssignor,
)

T1, T2, T3 = (uuid.UUID(int=n) for n in (1, 2, 3))


def owners(result) -> dict[tuple[uuid.UUID, int], list[str]]:
    seen: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member_id, assignment in result.items():
        for topic_id, parts in assignment.items():
            for partition in parts:
                seen.setdefault((topic_id, partition), []).append(member_id)
    return seen


def counts(result) -> dict[str, int]:
    return {m: sum(len(p) for p in a.values()) for m, a in result.items()}


def test_uniform_spreads_twelve_partitions_over_three_members_four_each():
    members = {m: MemberSpec(frozenset({T1})) for m in ("a", "b", "c")}
    result = UniformAssignor().assign(members, {T1: 12})
    assert counts(result) == {"a": 4, "b": 4, "c": 4}
    assert sorted(owners(result)) == [(T1, p) for p in range(12)]


def test_uniform_join_moves_only_the_newcomers_share():
    before = UniformAssignor().assign({m: MemberSpec(frozenset({T1})) for m in "abc"}, {T1: 12})
    members = {m: MemberSpec(frozenset({T1}), assignment=before[m]) for m in "abc"}
    members["d"] = MemberSpec(frozenset({T1}))
    after = UniformAssignor().assign(members, {T1: 12})
    assert counts(after) == {"a": 3, "b": 3, "c": 3, "d": 3}
    for member_id in "abc":
        assert after[member_id][T1] <= before[member_id][T1]  # nothing moved between old members


def test_uniform_leave_hands_the_leavers_partitions_out_and_keeps_the_rest():
    before = UniformAssignor().assign({m: MemberSpec(frozenset({T1})) for m in "abc"}, {T1: 12})
    members = {m: MemberSpec(frozenset({T1}), assignment=before[m]) for m in "ab"}
    after = UniformAssignor().assign(members, {T1: 12})
    assert counts(after) == {"a": 6, "b": 6}
    assert before["a"][T1] <= after["a"][T1] and before["b"][T1] <= after["b"][T1]


def test_uniform_heterogeneous_gives_topics_only_to_their_subscribers_and_balances():
    members = {"a": MemberSpec(frozenset({T1})), "b": MemberSpec(frozenset({T1, T2})),
               "c": MemberSpec(frozenset({T2}))}
    result = UniformAssignor().assign(members, {T1: 3, T2: 3})
    assert T2 not in result["a"] and T1 not in result["c"]
    assert sorted(counts(result).values()) == [2, 2, 2]
    assert all(len(o) == 1 for o in owners(result).values()) and len(owners(result)) == 6


def test_range_co_partitions_identical_subscriptions():
    members = {m: MemberSpec(frozenset({T1, T2})) for m in ("m0", "m1")}
    result = RangeAssignor().assign(members, {T1: 3, T2: 3})
    assert result["m0"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["m1"] == {T1: frozenset({2}), T2: frozenset({2})}


def test_range_orders_static_members_first_by_instance_id():
    members = {"z": MemberSpec(frozenset({T1}), instance_id="i0"), "a": MemberSpec(frozenset({T1}))}
    result = RangeAssignor().assign(members, {T1: 2})
    assert result == {"z": {T1: frozenset({0})}, "a": {T1: frozenset({1})}}


def test_unknown_topic_id_is_an_assignor_error():
    with pytest.raises(AssignorError):
        UniformAssignor().assign({"a": MemberSpec(frozenset({T3}))}, {T1: 1})


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefg"), st.sets(st.sampled_from([T1, T2, T3]), min_size=1),
                       min_size=1),
       st.lists(st.integers(0, 9), min_size=3, max_size=3),
       st.sampled_from([UniformAssignor(), RangeAssignor()]))
def test_every_subscribed_partition_is_owned_once_by_a_subscriber(subscriptions, sizes, assignor):
    partitions = dict(zip((T1, T2, T3), sizes, strict=True))
    members = {m: MemberSpec(frozenset(topics)) for m, topics in subscriptions.items()}
    result = assignor.assign(members, partitions)
    seen = owners(result)
    subscribed = set().union(*subscriptions.values())
    assert set(seen) == {(t, p) for t in subscribed for p in range(partitions[t])}
    for (topic_id, _), holders in seen.items():
        assert len(holders) == 1 and topic_id in subscriptions[holders[0]]
    if isinstance(assignor, UniformAssignor) and len({frozenset(s) for s in subscriptions.values()}) == 1:
        assert max(counts(result).values()) - min(counts(result).values()) <= 1

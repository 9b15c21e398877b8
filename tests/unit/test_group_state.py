"""The classic group state machine: every transition, valid or not."""
from __future__ import annotations

import itertools

import pytest

from kcore.coordinator.group.group import GroupMetadata
from kcore.coordinator.group.state import GroupState, IllegalStateError

S = GroupState
# Kafka's classic GroupState table (kafka.coordinator.group.GroupMetadata):
# target -> the states it may follow.
KAFKA_TABLE = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}
ALL_PAIRS = list(itertools.product(GroupState, GroupState))
VALID = [(source, target) for source, target in ALL_PAIRS if source in KAFKA_TABLE[target]]
INVALID = [(source, target) for source, target in ALL_PAIRS if source not in KAFKA_TABLE[target]]


def _ids(pairs):
    return [f"{source.kafka_name}->{target.kafka_name}" for source, target in pairs]


def test_each_state_carries_kafkas_valid_previous_states():
    for state in GroupState:
        assert state.valid_previous_states == frozenset(KAFKA_TABLE[state])


@pytest.mark.parametrize("source,target", VALID, ids=_ids(VALID))
def test_valid_transition_changes_state(source, target):
    group = GroupMetadata("g", source)
    group.transition_to(target)
    assert group.state is target


@pytest.mark.parametrize("source,target", INVALID, ids=_ids(INVALID))
def test_invalid_transition_raises_and_keeps_state(source, target):
    group = GroupMetadata("g", source)
    with pytest.raises(IllegalStateError):
        group.transition_to(target)
    assert group.state is source


def test_table_has_11_valid_and_14_invalid_transitions():
    assert (len(VALID), len(INVALID)) == (11, 14)


def test_can_rebalance_only_from_stable_completing_or_empty():
    for state in GroupState:
        assert GroupMetadata("g", state).can_rebalance() == (
            state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY))


def test_state_names_are_the_ones_describe_groups_reports():
    assert [s.kafka_name for s in GroupState] == [
        "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def test_transition_updates_current_state_timestamp():
    group = GroupMetadata("g")
    group.current_state_timestamp = 0
    group.transition_to(S.PREPARING_REBALANCE)
    assert group.current_state_timestamp > 0

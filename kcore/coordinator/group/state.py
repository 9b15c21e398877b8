"""Classic group states and their legal transitions.

Each member of GroupState carries the states a group may enter it from, as
Kafka's classic GroupState does (kafka.coordinator.group.GroupMetadata):

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- every state (Dead included: removing twice is harmless)

`GroupMetadata.transition_to` checks every change against this table and
raises IllegalStateError otherwise.
"""
from __future__ import annotations

from enum import Enum


class IllegalStateError(Exception):
    """A group was asked to enter a state it cannot reach from its current one."""


class GroupState(Enum):
    # (name reported by DescribeGroups/ListGroups, names of the valid previous states)
    EMPTY = ("Empty", ("PREPARING_REBALANCE",))
    PREPARING_REBALANCE = ("PreparingRebalance", ("STABLE", "COMPLETING_REBALANCE", "EMPTY"))
    COMPLETING_REBALANCE = ("CompletingRebalance", ("PREPARING_REBALANCE",))
    STABLE = ("Stable", ("COMPLETING_REBALANCE",))
    DEAD = ("Dead", ("EMPTY", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE", "DEAD"))

    def __init__(self, kafka_name: str, previous_names: tuple[str, ...]):
        self.kafka_name = kafka_name
        self._previous_names = previous_names

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        return frozenset(GroupState[name] for name in self._previous_names)

    def can_follow(self, previous: GroupState) -> bool:
        return previous.name in self._previous_names

"""Leader election rules, as pure functions of one partition's assignment,
ISR and the live brokers (Kafka's ``PartitionLeaderElectionAlgorithms``).

Every rule walks the assignment in order, so the preferred replica (the
first) wins whenever it is eligible and leadership spreads the way
placement spread it. Each returns ``Election(leader, isr, unclean)``;
``leader`` is NO_LEADER (-1) when no replica may lead, and the ISR is then
left as it was, so the last in-sync replicas are the ones that may lead
again once they return.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kcore.metadata import NO_LEADER


@dataclass(frozen=True)
class Election:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_partition(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                      unclean_allowed: bool) -> Election:
    """The leader died (or there was none): the first live ISR member;
    with ``unclean.leader.election.enable`` the first live replica when no
    ISR member lives (acknowledged data may be lost)."""
    for replica in assignment:
        if replica in isr and replica in live:
            return Election(replica, tuple(r for r in isr if r in live))
    if unclean_allowed:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), unclean=True)
    return Election(NO_LEADER, tuple(isr))


def controlled_shutdown(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                        shutting_down: Collection[int]) -> Election:
    """Move the leadership off brokers shutting down, to a live ISR member
    that is staying; NO_LEADER when there is none (the caller keeps the
    current leader then)."""
    staying = [r for r in isr if r not in shutting_down]
    for replica in assignment:
        if replica in staying and replica in live:
            return Election(replica, tuple(staying))
    return Election(NO_LEADER, tuple(isr))


def preferred_replica(assignment: Sequence[int], isr: Sequence[int],
                      live: Collection[int]) -> Election:
    """The first assigned replica, if it is live and in sync."""
    preferred = assignment[0] if assignment else NO_LEADER
    if preferred in live and preferred in isr:
        return Election(preferred, tuple(isr))
    return Election(NO_LEADER, tuple(isr))


def initial(assignment: Sequence[int], live: Collection[int]) -> Election:
    """A new partition: every live replica is in sync (all are empty)."""
    isr = tuple(r for r in assignment if r in live)
    return Election(isr[0] if isr else NO_LEADER, isr)

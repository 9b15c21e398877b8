"""Leader election rules and replica placement, case by case against
Kafka's behaviour (PartitionLeaderElectionAlgorithms, AdminUtils)."""
import pytest

from kcore.controller import election
from kcore.controller.placement import assign_replicas
from kcore.metadata import NO_LEADER, BrokerInfo, TopicError


@pytest.mark.parametrize("assignment,isr,live,unclean,expected", [
    ([1, 2, 3], [1, 2, 3], {2, 3}, False, (2, (2, 3), False)),      # first live ISR member
    ([3, 1, 2], [1, 2], {1, 2, 3}, False, (1, (1, 2), False)),      # assignment order decides
    ([1, 2, 3], [1], {2, 3}, False, (NO_LEADER, (1,), False)),      # no ISR member lives
    ([1, 2, 3], [1], {2, 3}, True, (2, (2,), True)),                # unclean: first live replica
    ([1, 2, 3], [1], set(), True, (NO_LEADER, (1,), False)),        # nobody lives
])
def test_offline_partition_election(assignment, isr, live, unclean, expected):
    result = election.offline_partition(assignment, isr, live, unclean)
    assert (result.leader, result.isr, result.unclean) == expected


def test_controlled_shutdown_moves_to_a_staying_isr_member():
    result = election.controlled_shutdown([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1})
    assert (result.leader, result.isr) == (2, (2, 3))
    stuck = election.controlled_shutdown([1, 2], [1], {1, 2}, {1})
    assert stuck.leader == NO_LEADER and stuck.isr == (1,)


def test_preferred_replica_only_when_live_and_in_sync():
    assert election.preferred_replica([1, 2], [1, 2], {1, 2}).leader == 1
    assert election.preferred_replica([1, 2], [2], {1, 2}).leader == NO_LEADER
    assert election.preferred_replica([1, 2], [1, 2], {2}).leader == NO_LEADER


def test_initial_election_takes_the_live_replicas():
    result = election.initial([3, 1, 2], {1, 2})
    assert (result.leader, result.isr) == (1, (1, 2))


def brokers(*ids, racks=None):
    return [BrokerInfo(i, "h", 1, racks[n] if racks else None) for n, i in enumerate(ids)]


def test_placement_is_i_plus_j_mod_n_without_racks():
    assert assign_replicas(4, 3, brokers(1, 2, 3)) == {
        0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 2, 3]}
    assert assign_replicas(2, 2, brokers(3, 1, 2), first_partition=4) == {4: [2, 3], 5: [3, 1]}


def test_placement_puts_replicas_on_distinct_racks_first():
    nodes = brokers(1, 2, 3, 4, racks=["a", "a", "b", "b"])
    assignment = assign_replicas(8, 2, nodes)
    rack = {b.broker_id: b.rack for b in nodes}
    for replicas in assignment.values():
        assert len({rack[r] for r in replicas}) == 2
    leaders = [replicas[0] for replicas in assignment.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3, 4, 4]   # leadership still spreads evenly
    three = assign_replicas(4, 3, nodes)
    for replicas in three.values():
        assert len(set(replicas)) == 3 and {rack[r] for r in replicas} == {"a", "b"}


def test_placement_refuses_a_factor_above_the_live_brokers():
    with pytest.raises(TopicError) as info:
        assign_replicas(1, 4, brokers(1, 2, 3))
    assert info.value.error_code == 38

"""kcore.testing.ports: the loopback ports tests bind."""
from __future__ import annotations

from kcore.testing.ports import free_port, free_ports


def test_ports_picked_before_any_is_bound_are_all_different():
    """A fixture picks a broker's port, its http.listeners port and its
    registry port before the broker binds any: each check that "nothing is
    bound to it" passes for all three, so only the picker can keep them
    apart. 1,000 picks from ~22,000 ports would repeat one almost surely
    (birthday bound) if each were drawn alone."""
    picked = [free_port() for _ in range(1000)]
    assert len(set(picked)) == len(picked)


def test_a_range_of_ports_overlaps_no_port_picked_just_before_or_after():
    before = [free_port() for _ in range(300)]
    base = free_ports(8)
    after = [free_port() for _ in range(300)]
    assert not set(range(base, base + 8)) & (set(before) | set(after))

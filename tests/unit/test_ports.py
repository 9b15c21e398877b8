"""kcore.testing.ports: the loopback ports tests bind."""
from __future__ import annotations

from kcore.testing import ports
from kcore.testing.ports import free_port, free_ports


def test_ports_picked_before_any_is_bound_are_all_different():
    """A fixture picks a broker's port, its http.listeners port and its
    registry port before the broker binds any: each check that "nothing is
    bound to it" passes for all three, so only the picker can keep them
    apart. 1,000 picks from ~22,000 ports would repeat one almost surely
    (birthday bound) if each were drawn alone."""
    picked = [free_port() for _ in range(1000)]
    assert len(set(picked)) == len(picked)


def test_ranges_and_single_ports_picked_in_turn_never_overlap():
    """A node of 8 processes takes port..port+7. 80 such ranges, with 3
    single ports picked after each, would repeat ~17 ports over ~22,000
    ports if each pick were drawn alone (880 picks: all still remembered)."""
    taken: list[int] = []
    for _ in range(80):
        base = free_ports(8)
        taken += [*range(base, base + 8), free_port(), free_port(), free_port()]
    assert len(set(taken)) == len(taken)


def test_each_xdist_worker_picks_from_its_own_slice(monkeypatch):
    """Workers are processes: none sees the ports another picked and has
    not bound yet, so their picks must not share a port to begin with."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        picked = {free_port() for _ in range(50)} | {free_ports(4) + 3 for _ in range(10)}
        slices.append((min(picked), max(picked)))
    assert slices[0][1] < slices[1][0] and slices[1][1] < slices[2][0]


def test_outside_xdist_a_pick_may_land_anywhere_in_the_range(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    picked = [free_port() for _ in range(200)]
    # 200 uniform picks over ~22,000 ports all in one third: ~3^-200.
    span = max(picked) - min(picked)
    assert span > (ports._ephemeral_low() - ports.FIRST_TEST_PORT) // 3

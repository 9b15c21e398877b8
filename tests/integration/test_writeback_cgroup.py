"""log.writeback.interval.bytes=-1, the default: a broker started in a
memory cgroup limited below the machine's memory writes behind its appends
(kcore/log/writeback.py); one outside it leaves the writeback to the
kernel, unless the test's own cgroup is limited too. Real cgroups (v1 or
v2, made as the backlog bench makes them) and real broker processes."""
from __future__ import annotations

import pytest

from bench.bench_backlog import MemoryCgroup
from kcore.log.writeback import memory_limit_bytes
from kcore.testing import BrokerProcess

QUIET = {"http.listeners": "", "schema.registry.listeners": ""}
LIMIT_MB = 256


def writes_behind(broker: BrokerProcess) -> bool:
    return "write-behind every 1048576 bytes" in broker.log()


def test_a_broker_in_a_limited_memory_cgroup_writes_behind_and_one_outside_does_not(tmp_path):
    try:
        cgroup = MemoryCgroup(LIMIT_MB << 20)
    except OSError as exc:  # not root, or no memory controller to write to
        pytest.skip(f"no memory cgroup can be made here: {exc}")
    into = ("sh", "-c", f'echo $$ > {cgroup.path}/cgroup.procs && exec "$@"', "sh")
    inside = BrokerProcess(tmp_path / "inside", QUIET, prefix=into)
    outside = BrokerProcess(tmp_path / "outside", QUIET)
    try:
        inside.start()
        outside.start()
        assert writes_behind(inside), inside.log()
        assert f"memory cgroup limit {LIMIT_MB} MiB" in inside.log()
        # Outside, the broker shares this test's cgroup and decides alike.
        assert writes_behind(outside) == (memory_limit_bytes() is not None), outside.log()
        set_off = BrokerProcess(tmp_path / "off", {**QUIET, "log.writeback.interval.bytes": "0"},
                                prefix=into).start()
        try:
            assert not writes_behind(set_off), set_off.log()
        finally:
            set_off.stop()
    finally:
        inside.stop()
        outside.stop()
        cgroup.remove()

"""log.writeback.interval.bytes=-1, the default: a broker started in a
memory cgroup limited below the machine's memory writes behind its appends
(kcore/log/writeback.py); one outside it leaves the writeback to the
kernel, unless the test's own cgroup is limited too. Real cgroups (v1 or
v2, made as the backlog bench makes them) and real broker processes."""
from __future__ import annotations

from confluent_kafka import Producer

from bench.bench_backlog import MemoryCgroup
from kcore.log.writeback import memory_limit_bytes
from kcore.testing import BrokerProcess, free_port
from tests.support.metrics import scrape

QUIET = {"http.listeners": "", "schema.registry.listeners": ""}
LIMIT_MB = 256
VALUE = bytes(range(256)) * 4


def writes_behind(broker: BrokerProcess) -> bool:
    return "write-behind every 1048576 bytes" in broker.log()


def started_bytes_after_4_mb(broker: BrokerProcess, http_port: int) -> float:
    """Produce 4 MB to one partition, then read the broker's counter."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for _ in range(4096):
        producer.produce("behind", VALUE, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    return scrape(f"http://127.0.0.1:{http_port}")[("kcore_log_writeback_started_bytes_total", ())]


def test_a_broker_in_a_limited_memory_cgroup_writes_behind_and_one_outside_does_not(tmp_path):
    # The suite runs as root (make test installs with apt-get, the fault
    # tests cut networks), as the backlog bench's test does in a cgroup.
    cgroup = MemoryCgroup(LIMIT_MB << 20)
    into = ("sh", "-c", f'echo $$ > {cgroup.path}/cgroup.procs && exec "$@"', "sh")
    http_port = free_port()
    inside = BrokerProcess(tmp_path / "inside", {**QUIET, "http.listeners": f"http://127.0.0.1:{http_port}"},
                           prefix=into)
    outside = BrokerProcess(tmp_path / "outside", QUIET)
    try:
        inside.start()
        outside.start()
        assert writes_behind(inside), inside.log()
        assert f"memory cgroup limit {LIMIT_MB} MiB" in inside.log()
        # 4 MB appended: at least 3 whole 1 MiB steps were handed to the worker.
        assert started_bytes_after_4_mb(inside, http_port) >= 3 << 20
        # Outside, the broker shares this test's cgroup and decides alike.
        assert writes_behind(outside) == (memory_limit_bytes() is not None), outside.log()
        off_port = free_port()
        set_off = BrokerProcess(tmp_path / "off", {**QUIET, "log.writeback.interval.bytes": "0",
                                                  "http.listeners": f"http://127.0.0.1:{off_port}"},
                                prefix=into).start()
        try:
            assert not writes_behind(set_off), set_off.log()
            assert started_bytes_after_4_mb(set_off, off_port) == 0
        finally:
            set_off.stop()
    finally:
        inside.stop()
        outside.stop()
        cgroup.remove()

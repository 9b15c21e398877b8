"""How long a test waits for its broker: kcore.testing's subprocess broker
against its embedded one, in interleaved rounds.

For each round: the wall time from ``start()`` to a broker that accepts
connections, and for the subprocess also the CPU seconds it used by then
(user + system, from /proc), which other load on the machine does not
inflate. The embedded broker's one-time import is paid before the rounds.

    .venv/bin/python bench/broker_startup.py [--rounds 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from kcore.testing import TEST_SETTINGS, BrokerProcess, EmbeddedBroker

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def summary(seconds: list[float]) -> str:
    return (f"median {statistics.median(seconds) * 1000:.0f} ms "
            f"(min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    import kcore.server.broker  # noqa: F401 - the embedded broker's import, outside the rounds
    subprocess_wall, subprocess_cpu, embedded_wall = [], [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="kcore-startup-") as scratch:
            broker = BrokerProcess(Path(scratch) / "subprocess" / "data", TEST_SETTINGS)
            started = time.perf_counter()
            process = broker.start().process
            subprocess_wall.append(time.perf_counter() - started)
            assert process is not None
            subprocess_cpu.append(cpu_seconds(process.pid))
            broker.kill()
            embedded = EmbeddedBroker(Path(scratch) / "embedded" / "data", TEST_SETTINGS)
            started = time.perf_counter()
            embedded.start()
            embedded_wall.append(time.perf_counter() - started)
            embedded.stop()
    print(f"subprocess broker, wall: {summary(subprocess_wall)}")
    print(f"subprocess broker, CPU:  {summary(subprocess_cpu)}")
    print(f"embedded broker, wall:   {summary(embedded_wall)}")
    print(f"load average over 1 min: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

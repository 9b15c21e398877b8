"""The broker's CPU per Produce request, the cost that a workload of many
small requests pays (num.processes on a machine shared with its clients,
low rates, linger.ms 0), as opposed to the per-byte cost the gate's
max-rate workloads measure.

Each run starts a single-node broker (data in a temp dir), creates a topic
of 16 partitions and sends ``--requests`` Produce requests of one 100-byte
record each (acks 1) from kcore's own asyncio client, 16 in flight on one
connection; the broker's user and system CPU over the requests, from
psutil (as kcore.bench.measure reads it), divided by their number. The client is not what is
measured, only the broker.

With ``--against REF`` the commit REF names is built as the gate builds it
(kcore/bench/builds.py, ``reuse-venv``) and both brokers run in turns (A B,
then B A, ...); each round prints B / A.

    .venv/bin/python -m bench.bench_requests
    .venv/bin/python -m bench.bench_requests --against main --rounds 4
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

import psutil
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.bench import builds
from kcore.bench.brokers import cache_dir
from kcore.client.connection import BrokerConnection
from kcore.client.producer import produce_batch
from kcore.protocol.records import Record, build_batch
from kcore.testing import BrokerProcess
from kcore.testing.broker import TEST_SETTINGS

PARTITIONS = 16
IN_FLIGHT = 16
WARM_UP = 500  # requests before the measured ones: connections, first segments


def _cpu_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of process ``pid``."""
    times = psutil.Process(pid).cpu_times()
    return times.user, times.system


async def _send(bootstrap: str, requests: int, pid: int) -> tuple[float, float]:
    host, port = bootstrap.rsplit(":", 1)
    connection = await BrokerConnection.open(host, int(port))
    batch = bytes(build_batch([Record(value=os.urandom(100))]))
    try:
        for index in range(WARM_UP):
            await produce_batch(connection, "requests", index % PARTITIONS, batch)

        async def sender(first: int) -> None:
            for index in range(first, requests, IN_FLIGHT):
                await produce_batch(connection, "requests", index % PARTITIONS, batch)

        before = _cpu_s(pid)
        await asyncio.gather(*(sender(first) for first in range(IN_FLIGHT)))
        after = _cpu_s(pid)
    finally:
        connection.close()
    return after[0] - before[0], after[1] - before[1]


def run_once(launcher: list[str] | None, requests: int) -> tuple[float, float]:
    """Broker (user, system) microseconds per request."""
    with tempfile.TemporaryDirectory(prefix="bench-requests-") as scratch:
        broker = BrokerProcess(Path(scratch) / "data", TEST_SETTINGS, launcher=launcher).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic("requests", PARTITIONS, 1)])["requests"].result(30)
            user_s, system_s = asyncio.run(_send(broker.bootstrap_servers, requests, broker.process.pid))
        finally:
            broker.stop()
    return user_s * 1e6 / requests, system_s * 1e6 / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="REF", help="build REF (A) and compare this checkout (B) with it")
    args = parser.parse_args()
    builds_run = {"B": None}
    if args.against:
        built = builds.build(builds.CHECKOUT_ROOT, args.against, "A", cache_dir() / "builds", "reuse-venv")
        builds_run = {"A": built.launcher(), "B": None}
    ratios = []
    for round_index in range(args.rounds):
        labels = list(builds_run) if round_index % 2 == 0 else list(reversed(builds_run))
        totals = {}
        for label in labels:
            user_us, system_us = run_once(builds_run[label], args.requests)
            totals[label] = user_us + system_us
            print(f"round {round_index} {label}: broker user {user_us:.1f} + system {system_us:.1f} us "
                  f"per request", flush=True)
        if "A" in totals:
            ratios.append(totals["B"] / totals["A"])
            print(f"round {round_index}: B / A {ratios[-1]:.3f}", flush=True)
    if ratios:
        print(f"B / A per request: median {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f}) over {len(ratios)} rounds")


if __name__ == "__main__":
    main()

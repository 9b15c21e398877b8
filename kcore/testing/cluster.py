"""A real kcore cluster for tests: broker processes on loopback ports,
coordinated by a real ZooKeeper (kcore.testing.zookeeper).

Settings make failures quick to see: 3 s ZooKeeper sessions (a SIGKILLed
broker leaves the cluster ~3 s later), a 3 s replica lag limit, short
controlled-shutdown and fetch back-offs. Metadata is read with
confluent-kafka's AdminClient, a real client (the ``testing`` extra
installs it). Every wait is bounded and fails with the brokers' log tails.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcore.testing.broker import TEST_SETTINGS, BrokerProcess
from kcore.testing.zookeeper import ZooKeeperServer

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

SESSION_TIMEOUT_MS = 3000
CLUSTER_SETTINGS = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
    "offsets.topic.num.partitions": "6",
    "group.initial.rebalance.delay.ms": "0",
    "replica.high.watermark.checkpoint.interval.ms": "500",
}
WAIT_S = 30.0


class Cluster:
    """``n`` brokers with ids 1..n sharing one ZooKeeper chroot. Not
    thread-safe: one owner starts, stops and asks it."""

    def __init__(self, base: Path, zookeeper_connect: str, n: int = 3,
                 overrides: Mapping[str, str] | None = None,
                 racks: Mapping[int, str] | None = None):
        self.base = Path(base)
        self.connect = f"{zookeeper_connect}/kcore"
        self.brokers: dict[int, BrokerProcess] = {}
        for broker_id in range(1, n + 1):
            settings = {**CLUSTER_SETTINGS, "broker.id": str(broker_id),
                        "zookeeper.connect": self.connect, **(overrides or {})}
            if racks and broker_id in racks:
                settings["broker.rack"] = racks[broker_id]
            self.brokers[broker_id] = BrokerProcess(self.base / f"broker-{broker_id}", settings)
        self._admin: AdminClient | None = None
        self._admin_bootstrap = ""

    @property
    def bootstrap_servers(self) -> str:
        """Every broker, as a client's ``bootstrap.servers`` names them."""
        return ",".join(b.bootstrap_servers for b in self.brokers.values())

    # The project's own tests say `bootstrap`; one value under both names.
    bootstrap = bootstrap_servers

    def start(self) -> Cluster:
        """Start every broker and wait until each one's Metadata names them
        all and the controller. Each broker answers from its own cache,
        which the controller fills after the fact: a client whose first
        answer names no controller waits for one before any admin request
        (librdkafka until its request times out)."""
        for broker in self.brokers.values():
            broker.start()
        self.wait_for(self._every_broker_knows_the_cluster, "every broker registered and told of the controller")
        return self

    def _every_broker_knows_the_cluster(self) -> bool:
        from confluent_kafka.admin import AdminClient
        for broker in self.brokers.values():
            # A new client per broker: its first Metadata goes to its one bootstrap server.
            found = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=5)
            if found.controller_id < 0 or len(found.brokers) != len(self.brokers):
                return False
        return True

    def kill_all(self) -> None:
        for broker in self.brokers.values():
            broker.resume()
            broker.kill()

    # -- metadata through a real client ----------------------------------------------------
    @property
    def admin(self) -> AdminClient:
        """A client of the brokers that answer now (a paused one would hold
        its requests until their timeout)."""
        from confluent_kafka.admin import AdminClient
        answering = ",".join(b.bootstrap_servers for b in self.brokers.values() if b.running)
        if self._admin is None or self._admin_bootstrap != answering:
            self._admin = AdminClient({"bootstrap.servers": answering,
                                       "topic.metadata.refresh.interval.ms": "200"})
            self._admin_bootstrap = answering
        return self._admin

    def metadata(self, topic: str | None = None) -> Any:
        """confluent-kafka's ClusterMetadata (brokers, topics)."""
        return self.admin.list_topics(topic, timeout=5)

    def partitions(self, topic: str) -> dict:
        """partition id -> confluent PartitionMetadata (leader, replicas, isrs)."""
        found = self.metadata(topic).topics.get(topic)
        return dict(found.partitions) if found is not None and found.error is None else {}

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, str] | None = None) -> None:
        """Create and wait until every partition has a leader and a full ISR."""
        from confluent_kafka.admin import NewTopic
        futures = self.admin.create_topics([NewTopic(name, partitions, replication_factor,
                                                     config=dict(configs or {}))])
        self.wait_for(futures[name].done, f"{name} is created")
        futures[name].result()
        self.wait_for(lambda: self.fully_replicated(name, partitions, replication_factor),
                      f"{name} has a leader and a full ISR everywhere")

    def fully_replicated(self, topic: str, partitions: int, replication_factor: int) -> bool:
        found = self.partitions(topic)
        return len(found) == partitions and all(
            p.leader >= 0 and len(p.isrs) == replication_factor for p in found.values())

    def leader(self, topic: str, partition: int) -> int:
        found = self.partitions(topic).get(partition)
        return found.leader if found is not None else -1

    def wait_leader(self, topic: str, partition: int, timeout: float = WAIT_S) -> int:
        """The partition's leader, once Metadata names one. A broker answers
        from its own metadata cache, which the controller updates after the
        fact (as in Kafka), so any one answer may not name a leader yet."""
        answers: list[int] = []

        def named() -> bool:
            answers.append(self.leader(topic, partition))
            return answers[-1] >= 0
        self.wait_for(named, f"{topic}-{partition} has a leader", timeout)
        return answers[-1]

    # -- waiting -------------------------------------------------------------------------------
    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        """Poll ``condition`` every 0.1 s; AssertionError with the brokers'
        log tails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if condition():
                    return
            except Exception:  # a broker being restarted: ask again
                pass
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- broker {i}\n{b.log()[-3000:]}" for i, b in self.brokers.items())
                raise AssertionError(f"timed out after {timeout:g}s waiting until {what}\n{logs}")
            time.sleep(0.1)


@contextmanager
def cluster(n: int = 3, overrides: Mapping[str, str] | None = None,
            directory: Path | None = None) -> Iterator[Cluster]:
    """A standalone ZooKeeper and ``n`` started brokers (ids 1..n), every
    process killed on exit; their files live in ``directory`` or in a
    temporary directory removed on exit."""
    with tempfile.TemporaryDirectory(prefix="kcore-cluster-") as scratch:
        base = Path(directory) if directory is not None else Path(scratch)
        zookeeper = ZooKeeperServer(base / "zookeeper")
        started: Cluster | None = None
        try:
            zookeeper.start()
            started = Cluster(base / "brokers", zookeeper.connect_string, n,
                              {**TEST_SETTINGS, **(overrides or {})})
            yield started.start()
        finally:
            if started is not None:
                started.kill_all()
            zookeeper.kill()

"""Nemeses: faults that start, last a bounded time, and are undone.

Each `Nemesis` picks its targets from the cluster as it is when the fault
starts (``context``: each partition's leader, the controller), does the
fault in start() and undoes it in stop(), which the runner calls in a
``finally``. start() returns what it did: ``targets`` (hosts) and
``affected`` (broker ids whose partitions must fail over), kept in the
history's nemesis op.

Network faults are blackhole routes (network.py): what kind of cut each
makes is in its docstring. Clock and fsync faults go through the broker's
preloaded shim (clock.py, shim.c). Disk faults need brokers whose data
dirs are size-limited tmpfs mounts (FaultCluster(tmpfs_size=...)).
"""
from __future__ import annotations

import os
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from tests.faults.harness.cluster import FaultCluster
from tests.faults.harness.network import CLIENT


@dataclass
class Context:
    leaders: dict[str, int]           # "topic:partition" -> broker id
    controller: int
    rng: random.Random = field(default_factory=random.Random)

    def a_leader(self) -> int:
        """A broker that leads at least one partition under test."""
        candidates = sorted({b for b in self.leaders.values() if b > 0})
        return self.rng.choice(candidates) if candidates else 1

    def a_follower_of(self, leader: int, brokers: list[int]) -> int:
        return self.rng.choice([b for b in brokers if b != leader])


class Nemesis(ABC):
    name = "none"

    @abstractmethod
    def start(self, cluster: FaultCluster, context: Context) -> dict:
        """Inject the fault; what was done, for the history."""

    @abstractmethod
    def stop(self, cluster: FaultCluster) -> None:
        """Undo the fault."""


class NetworkNemesis(Nemesis):
    def stop(self, cluster: FaultCluster) -> None:
        cluster.network.heal()


class IsolateOne(NetworkNemesis):
    """A partition leader cut from every other broker and every ZooKeeper
    server; clients still reach it (a deposed leader must not acknowledge)."""
    name = "isolate-one"

    def start(self, cluster, context):
        target = context.a_leader()
        cluster.network.isolate(cluster.host_of(target))
        return {"targets": [cluster.host_of(target)], "affected": [target]}


class MajorityMinority(NetworkNemesis):
    """Brokers and ZooKeeper servers split in two: the minority holds a
    partition leader, fewer than half the brokers and one ZooKeeper
    server. Clients reach both sides."""
    name = "majority-minority"

    def start(self, cluster, context):
        leader = context.a_leader()
        others = [b for b in cluster.brokers if b != leader]
        minority_brokers = [leader, *context.rng.sample(others, (cluster.count - 1) // 2 - 1)]
        minority = {cluster.host_of(b) for b in minority_brokers} | {context.rng.choice(cluster.zookeeper_hosts)}
        majority = set(cluster.broker_hosts + cluster.zookeeper_hosts) - minority
        cluster.network.partition(minority, majority)
        return {"targets": sorted(minority), "affected": minority_brokers}


class ControllerFromZooKeeper(NetworkNemesis):
    """The controller cut from every ZooKeeper server, not from the
    brokers or clients: its session expires, another broker takes over."""
    name = "controller-from-zookeeper"

    def start(self, cluster, context):
        controller = context.controller if context.controller > 0 else context.a_leader()
        for zk in cluster.zookeeper_hosts:
            cluster.network.cut(cluster.host_of(controller), zk)
        return {"targets": [cluster.host_of(controller)], "affected": [controller]}


class ZooKeeperFromEveryone(NetworkNemesis):
    """Every ZooKeeper server cut from every broker and client (the
    ensemble keeps its quorum): brokers must keep serving what they lead."""
    name = "zookeeper-from-everyone"

    def start(self, cluster, context):
        for zk in cluster.zookeeper_hosts:
            for other in [*cluster.broker_hosts, CLIENT]:
                cluster.network.cut(zk, other)
        return {"targets": list(cluster.zookeeper_hosts), "affected": []}


class Bridge(NetworkNemesis):
    """Two halves that cannot reach each other and one broker and one
    ZooKeeper server that reach both (Jepsen's bridge)."""
    name = "bridge"

    def start(self, cluster, context):
        brokers = list(cluster.broker_hosts)
        context.rng.shuffle(brokers)
        middle, rest = brokers[0], brokers[1:]
        half = len(rest) // 2
        left = set(rest[:half]) | {"z1"}
        right = set(rest[half:]) | {"z3"}
        cluster.network.partition(left, right)
        return {"targets": sorted(left) + ["|"] + sorted(right), "bridge": [middle, "z2"],
                "affected": [int(h[1:]) for h in rest]}


class Pause(Nemesis):
    """SIGSTOP a partition leader; SIGCONT at the end."""
    name = "pause"

    def start(self, cluster, context):
        self.target = context.a_leader()
        cluster.brokers[self.target].pause()
        return {"targets": [cluster.host_of(self.target)], "affected": [self.target]}

    def stop(self, cluster):
        cluster.brokers[self.target].resume()


class KillRestart(Nemesis):
    """SIGKILL a partition leader; start it again (same data) at the end."""
    name = "kill"

    def start(self, cluster, context):
        self.target = context.a_leader()
        cluster.brokers[self.target].kill()
        return {"targets": [cluster.host_of(self.target)], "affected": [self.target]}

    def stop(self, cluster):
        if not cluster.brokers[self.target].running:
            cluster.brokers[self.target].start()


class ClockJump(Nemesis):
    """A partition leader's wall clock jumps an hour (forward and back on
    alternate faults); set right at the end. Monotonic time is untouched,
    as an NTP step leaves it."""
    name = "clock-jump"
    seconds = 3600.0

    def __init__(self):
        self.sign = 1

    def start(self, cluster, context):
        self.target = context.a_leader()
        cluster.controls[self.target].jump(self.sign * self.seconds)
        done = {"targets": [cluster.host_of(self.target)], "affected": [], "jump_s": self.sign * self.seconds}
        self.sign = -self.sign
        return done

    def stop(self, cluster):
        cluster.controls[self.target].reset()


class ClockDrift(Nemesis):
    """A partition leader's wall clock runs 5x as fast (or stands nearly
    still, on alternate faults); set right at the end."""
    name = "clock-drift"

    def __init__(self):
        self.ppm = 4_000_000

    def start(self, cluster, context):
        self.target = context.a_leader()
        cluster.controls[self.target].drift(self.ppm)
        done = {"targets": [cluster.host_of(self.target)], "affected": [], "drift_ppm": self.ppm}
        self.ppm = -900_000 if self.ppm > 0 else 4_000_000
        return done

    def stop(self, cluster):
        cluster.controls[self.target].reset()


class SlowFsync(Nemesis):
    """Every fsync/fdatasync of a partition leader sleeps 200 ms first."""
    name = "slow-fsync"
    delay_s = 0.2

    def start(self, cluster, context):
        self.target = context.a_leader()
        cluster.controls[self.target].slow_fsync(self.delay_s)
        return {"targets": [cluster.host_of(self.target)], "affected": [], "delay_s": self.delay_s}

    def stop(self, cluster):
        cluster.controls[self.target].slow_fsync(0)


class DiskFull(Nemesis):
    """A follower of the first partition under test finds its log dir's
    tmpfs full (a filler file leaves 4 KiB); the filler goes at the end.
    With every broker a replica of every partition, the follower leads
    other partitions too: their leader must stop acknowledging as well."""
    name = "disk-full"
    leave_bytes = 4096

    def start(self, cluster, context):
        first = sorted(context.leaders)[0]
        self.target = context.a_follower_of(context.leaders[first], list(cluster.brokers))
        directory = cluster.brokers[self.target].data_dir
        self.filler = directory / "filler"
        stat = os.statvfs(directory)
        free = stat.f_bavail * stat.f_frsize
        remaining = max(0, free - self.leave_bytes)
        chunk = bytes(1 << 20)
        try:    # ENOSPC, even at the open: the broker filled what was left first
            with open(self.filler, "wb") as handle:
                while remaining > 0:
                    remaining -= handle.write(chunk[:min(len(chunk), remaining)])
        except OSError:
            pass
        return {"targets": [cluster.host_of(self.target)], "affected": [self.target],
                "follower_of": first, "free_bytes": free}

    def stop(self, cluster):
        Path(self.filler).unlink(missing_ok=True)


class DiskReadOnly(Nemesis):
    """A follower's log dir read-only: every write, create, truncate,
    rename or unlink under it fails with EROFS (the shim, shim.c: a tmpfs
    in use cannot be remounted read-only); writable again at the end."""
    name = "disk-read-only"

    def start(self, cluster, context):
        first = sorted(context.leaders)[0]
        self.target = context.a_follower_of(context.leaders[first], list(cluster.brokers))
        cluster.controls[self.target].set_read_only(True)
        return {"targets": [cluster.host_of(self.target)], "affected": [self.target], "follower_of": first}

    def stop(self, cluster):
        cluster.controls[self.target].set_read_only(False)


ALL = [IsolateOne, MajorityMinority, ControllerFromZooKeeper, ZooKeeperFromEveryone, Bridge, Pause,
       KillRestart, ClockJump, ClockDrift, DiskFull, DiskReadOnly, SlowFsync]
BY_NAME = {nemesis.name: nemesis for nemesis in ALL}

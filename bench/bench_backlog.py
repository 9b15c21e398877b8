"""Backlog drain: a consumer group that fell behind by more than the page
cache holds catches up from disk while producers keep writing.

Kafka's design point: a reader far behind hits the disk, and the writers,
who touch only the tail of the log (still in the page cache), should not
notice. One run:

1. The broker starts in a memory cgroup limited to ``--memory-mb``
   (v1 ``memory.limit_in_bytes`` or v2 ``memory.max``; the page cache the
   broker's writes fill is charged to it, so it keeps at most that much of
   the log cached, less its own ~80 MB). Without a writable cgroup the run says so and reads come from
   the page cache. ``--target kafka09`` runs Kafka 0.9 instead (the peer
   that keeps its log on disk, kcore.bench.peers), with a 256 MB heap and
   the cgroup raised by that heap and the JVM's other memory; its
   ZooKeeper runs outside the cgroup. The clients
   (bench/backlog_clients.py) run under each broker's client interpreter.
2. Backlog: one producer writes ``--backlog-mb`` (default 4x the memory
   limit) as fast as it can; that rate is the peak. The page cache is then
   written back and dropped (as root).
3. A producer sends at ``--rate-fraction`` (default 0.5) of the peak for
   ``--before-s`` seconds alone: its acknowledgement latencies "before".
4. A consumer group with no committed offsets starts from the earliest
   offset and reads until it has every message of the backlog; the
   producer keeps its rate: latencies "during", the catch-up MB/s, and the
   bytes the broker read from the block device (``/proc/PID/io``).

``--consumer-nice N`` runs the catch-up consumer at that nice value. On a
machine of few cores the consumer, the producer and the broker share the
CPUs, where a real cluster's clients run elsewhere: at 19 the consumer
gets only what the others leave, so what the producer still feels is the
broker's own doing (its disk reads and its fetch answers).

``--from-cache`` skips the cgroup and the dropped cache (the backlog is
still written back first, so no writeback competes with the catch-up):
the same run with every read served from memory, so that what remains of the producer's
slowdown is the CPU the catch-up takes, not the disk. The memory-only peer
tansu runs only this way. With several ``--target``, each round runs
them one after the other, each on a fresh data directory.

Figures: peak MB/s, catch-up MB/s (from the group's first message to its
last; the time the group took to form is ``group_forming_s``), producer
p50/p99/p99.9 before and during and their ratio (during / before: near 1 means the writers did not
notice), disk bytes read over backlog bytes. One JSON line per run with
``--json``::

    .venv/bin/python -m bench.bench_backlog
    .venv/bin/python -m bench.bench_backlog --memory-mb 256 --backlog-mb 1024 --rounds 2
    .venv/bin/python -m bench.bench_backlog --rate 40000 --rounds 2 --target kcore --target kafka09
    .venv/bin/python -m bench.bench_backlog --rate 40000 --consumer-nice 19
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kcore.bench import procs
from kcore.bench.brokers import Setup, create_topic_admin, targets
from kcore.bench.idle import drop_page_cache
from kcore.bench.workload import load
from kcore.testing.broker import BrokerProcess

TOPIC = "backlog"
PARTITIONS = 16
MESSAGE_BYTES = 1024
REPO = Path(__file__).resolve().parents[1]
# Peers start from this workload's shape (16 partitions, page-cache durability).
WORKLOAD = "1-topic-16-partitions-1kb-max"
# Kafka 0.9's heap in its cgroup, and what its JVM takes beside the heap
# (metaspace, code cache, thread stacks: ~150-200 MB measured with
# memory.peak on an idle broker), on top of --memory-mb.
KAFKA09_HEAP_MB = 256
JVM_OTHER_MB = 192
# Disk targets only: a memory-only peer (tansu) would hold the backlog in
# its cgroup, and noida-db answers a fetch with everything it holds.
TARGETS = ("kcore", "kafka09", "tansu")
MEMORY_ONLY = ("tansu",)
FILL_TIMEOUT_S = 600
CATCH_UP_TIMEOUT_S = 900
CGROUP_V1 = Path("/sys/fs/cgroup/memory")
CGROUP_V2 = Path("/sys/fs/cgroup")


class MemoryCgroup:
    """A memory cgroup of its own (v1 where the ``memory`` controller is
    mounted on its own, else v2), or None where none can be made."""

    def __init__(self, limit_bytes: int):
        v1 = CGROUP_V1.is_dir()
        parent = CGROUP_V1 if v1 else CGROUP_V2
        if not v1 and "memory" not in (CGROUP_V2 / "cgroup.controllers").read_text().split():
            raise OSError("no memory controller")
        self.path = parent / f"kcore-backlog-{os.getpid()}"
        self.path.mkdir()
        self._limit, self._peak = (("memory.limit_in_bytes", "memory.max_usage_in_bytes") if v1
                                   else ("memory.max", "memory.peak"))
        (self.path / self._limit).write_text(str(limit_bytes))

    @classmethod
    def make(cls, limit_bytes: int) -> MemoryCgroup | None:
        try:
            return cls(limit_bytes)
        except OSError as error:
            print(f"no memory cgroup ({error}): reads of the backlog may come from the page cache",
                  file=sys.stderr)
            return None

    def max_usage_bytes(self) -> int | None:
        try:
            return int((self.path / self._peak).read_text())
        except OSError:  # memory.peak is new in Linux 5.19
            return None

    def remove(self) -> None:
        for _ in range(50):  # a group can only go once its last process has
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


@dataclass
class Broker:
    """The broker under test, whichever it is: where clients connect, the
    process whose disk reads count, and how its clients run."""
    bootstrap: str
    pid: int
    stop: Callable[[], object]
    client_python: str = sys.executable
    client_config: dict = field(default_factory=dict)


def _into(cgroup: MemoryCgroup | None) -> tuple:
    """A command prefix that moves the command into ``cgroup`` before it
    touches a page."""
    return () if cgroup is None else (
        "sh", "-c", f'echo $$ > {cgroup.path}/cgroup.procs && exec "$@"', "sh")


def start_kcore(workdir: Path, cgroup: MemoryCgroup | None) -> Broker:
    broker = BrokerProcess(workdir / "data", {"http.listeners": "", "schema.registry.listeners": ""},
                           prefix=_into(cgroup)).start()
    assert broker.process is not None
    create_topic_admin(broker.bootstrap, TOPIC, PARTITIONS, {})
    return Broker(broker.bootstrap, broker.process.pid, broker.stop)


def start_peer(peer, workdir: Path, cgroup: MemoryCgroup | None) -> Broker:
    """Kafka 0.9 runs in ``cgroup`` with a heap of KAFKA09_HEAP_MB (its
    ZooKeeper outside it); a memory-only peer gets no cgroup (it would
    have to hold the backlog in it)."""
    peer.install()
    running = peer.start(workdir, Setup(), load(WORKLOAD), prefix=_into(cgroup), heap_mb=KAFKA09_HEAP_MB)
    try:
        peer.create_topic(running, TOPIC, PARTITIONS)
    except Exception:
        running.stop()
        raise
    return Broker(running.bootstrap, running.pid, running.stop, peer.client_python(), dict(peer.client_config))


def memory_limit_mb(args) -> int:
    """The cgroup's limit: ``--memory-mb`` for the page cache and kcore's
    own ~80 MB; a JVM broker also gets its heap and its other memory."""
    return args.memory_mb + (KAFKA09_HEAP_MB + JVM_OTHER_MB if args.target == "kafka09" else 0)


def read_bytes(pid: int) -> int:
    """Bytes the process caused to be read from the block device."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


class Client:
    """One bench.backlog_clients process, run by the broker's client
    interpreter. A reader thread queues its stdout lines."""

    def __init__(self, broker: Broker, workdir: Path, role: str, nice: int = 0, **spec):
        self.out = workdir / f"{role}.json"
        self.log_path = workdir / f"{role}.log"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        niced = ["nice", "-n", str(nice)] if nice else []
        self.process = procs.spawn([*niced, broker.client_python, "-m", "bench.backlog_clients"], self.log_path,
                                   cwd=REPO, env=env, pipes=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(json.dumps({"role": role, "bootstrap": broker.bootstrap, "topic": TOPIC,
                              "partitions": PARTITIONS, "message_bytes": MESSAGE_BYTES,
                              "config": broker.client_config, "out": str(self.out), **spec}))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.strip())
        self._lines.put(None)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def expect(self, word: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line == word:
                return
            if line is None:
                procs.stop(self.process)
                raise RuntimeError(f"{self.log_path.stem} client: no {word!r}: {procs.tail(self.log_path, 2000)}")

    def result(self, timeout: float):
        self.expect("done", timeout)
        self.process.wait(30)
        return json.loads(self.out.read_text())


def run_once(root: Path, args) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="backlog-", dir=root))
    cgroup = None if args.from_cache else MemoryCgroup.make(memory_limit_mb(args) << 20)
    broker = None
    try:
        broker = (start_kcore(workdir, cgroup) if args.target == "kcore"
                  else start_peer(targets()[args.target], workdir, cgroup))
        count = (args.backlog_mb << 20) // MESSAGE_BYTES
        filled = Client(broker, workdir, "fill", count=count).result(FILL_TIMEOUT_S)
        if filled["failures"]:
            raise RuntimeError(f"{args.target}: {filled['failures']} of the backlog's messages not delivered")
        peak_mb_s = filled["mb_s"]
        backlog = Client(broker, workdir, "offsets").result(60)
        if args.from_cache:  # written back like the dropped cache, so only the drop differs
            os.sync()
        dropped = False if args.from_cache else drop_page_cache()
        rate = args.rate or peak_mb_s * 1e6 / MESSAGE_BYTES * args.rate_fraction
        producer = Client(broker, workdir, "paced", rate=rate)
        producer.expect("ready", 60)
        producer.send("go")
        time.sleep(args.before_s)
        read_before = read_bytes(broker.pid)
        caught_up = Client(broker, workdir, "catch-up", nice=args.consumer_nice,
                           backlog=backlog).result(CATCH_UP_TIMEOUT_S)
        read_during = read_bytes(broker.pid) - read_before
        producer.send("stop")
        produced = producer.result(120)
        return summary(args, cgroup, dropped, backlog, peak_mb_s, rate, caught_up, produced, read_during)
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        if cgroup is not None:
            cgroup.remove()


def summary(args, cgroup, dropped, backlog, peak_mb_s, rate, caught_up, produced, read_during) -> dict:
    # The catch-up starts at the first message: the group's forming before
    # it (kcore's group.initial.rebalance.delay.ms of 3 s, tansu's half a
    # session timeout, nothing on Kafka 0.9, which predates the delay) reads
    # nothing and is reported apart.
    began, ended, size = caught_up["first"], caught_up["ended"], caught_up["bytes"]
    acks = produced["acks"]
    warm = min(t for t, _ in acks) + 1.0 if acks else 0.0  # the first second: connection warm-up
    before = [latency for t, latency in acks if warm <= t < began]
    during = [latency for t, latency in acks if began <= t <= ended]
    run = {"target": args.target, "memory_limit_mb": memory_limit_mb(args) if cgroup else None,
           "page_cache_dropped": dropped,
           "backlog_mb": round(sum(backlog.values()) * MESSAGE_BYTES / 1e6, 1),
           "peak_mb_s": round(peak_mb_s, 1), "rate_msg_s": round(rate),
           "catch_up_mb_s": round(size / max(ended - began, 1e-9) / 1e6, 1),
           "catch_up_s": round(ended - began, 2), "catch_up_complete": not caught_up["unfinished"],
           "group_forming_s": round(began - caught_up["began"], 2), "consumer_nice": caught_up["nice"],
           "disk_read_mb": round(read_during / 1e6, 1),
           "before": percentiles(before), "during": percentiles(during),
           "producer_failures": produced["failures"], "messages_sent": produced["sent"]}
    peak = cgroup.max_usage_bytes() if cgroup is not None else None
    if peak is not None:
        run["cgroup_max_usage_mb"] = round(peak / 1e6, 1)
    if run["before"].get("p99_ms") and run["during"].get("p99_ms"):
        run["p99_during_over_before"] = round(run["during"]["p99_ms"] / run["before"]["p99_ms"], 2)
    return run


def percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        return {"n": 0}
    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1e3, 2)
    return {"n": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "p999_ms": at(0.999)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--target", action="append", choices=TARGETS,
                        help="broker to run (repeatable; default kcore); with several, each round runs "
                             "them one after the other")
    parser.add_argument("--memory-mb", type=int, default=512, help="the broker's cgroup memory limit")
    parser.add_argument("--backlog-mb", type=int, default=0, help="default: 4x --memory-mb")
    parser.add_argument("--rate-fraction", type=float, default=0.5, help="of the peak produce rate")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="msg/s of the paced producer instead of a fraction of the peak")
    parser.add_argument("--before-s", type=float, default=5.0)
    parser.add_argument("--from-cache", action="store_true",
                        help="no memory cgroup and no dropped cache: the same catch-up from the page cache, "
                             "which tells what the disk reads add to the producer's latency")
    parser.add_argument("--consumer-nice", type=int, default=0, choices=range(20), metavar="0-19",
                        help="the catch-up consumer's nice value: at 19 it takes only CPU the producer and "
                             "the broker leave, as if it ran on another machine")
    parser.add_argument("--data-root", default=None, help="where data dirs go (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per run")
    args = parser.parse_args(argv)
    args.backlog_mb = args.backlog_mb or 4 * args.memory_mb
    names = args.target or ["kcore"]
    for name in names:
        if name in MEMORY_ONLY and not args.from_cache:
            parser.error(f"{name} keeps its data in memory: run it with --from-cache")
    root = Path(tempfile.mkdtemp(prefix="kcore-backlog-", dir=args.data_root))
    try:
        for round_index, name in ((r, name) for r in range(args.rounds) for name in names):
            run = run_once(root, argparse.Namespace(**{**vars(args), "target": name}))
            run["round"] = round_index
            print(json.dumps(run) if args.json else
                  f"{name} round {round_index}: backlog {run['backlog_mb']} MB (cgroup "
                  f"{run['memory_limit_mb']} MB), peak {run['peak_mb_s']} MB/s, producer at "
                  f"{run['rate_msg_s']} msg/s; catch-up {run['catch_up_mb_s']} MB/s in "
                  f"{run['catch_up_s']} s, {run['disk_read_mb']} MB read from disk; producer p50/p99/p99.9 "
                  f"before {run['before']}, during {run['during']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

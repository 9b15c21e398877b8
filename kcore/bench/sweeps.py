"""Sweeps: the same workloads over several configs, interleaved, one JSON
line per run.

A config is a target broker, a broker set-up (storage, network, broker
keys) and changes to the workload (codec, payload, durability). Rounds run
the configs in alternating order (A B C, C B A, A B C ...) so drift in the
machine's load hits every config alike; every config gets a fresh broker
per round (one per group of workloads that need the same broker: one
node or a cluster, a listener's protocol), which runs each workload of the
sweep once. With ``per_workload`` (``kcore bench compare``) the configs
take turns on each workload instead, a fresh broker each time, so the two
runs compared are next to each other in time.

Only one broker runs at a time: each is stopped after its round, its data
removed, and before the next starts the page cache is written back and
dropped and the machine is waited on until idle (kcore/bench/idle.py):
what a peer leaves behind (a JVM's collections, an in-memory broker's
snapshot being written back) is not measured in the next one's round.
What was done and seen is in each record's ``settle``.

Built-in sweeps (``SWEEPS``): peers, durability, disk, network, codecs,
processes (num.processes 1/2/4/8/auto beside noida-db and tansu), metrics
(/metrics served or not: the cost of the counters on the data path),
security (PLAINTEXT, SSL, SASL_SSL listeners).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from kcore.bench import brokers, measure, procs
from kcore.bench.brokers import Setup, Unsupported
from kcore.bench.idle import Settler
from kcore.bench.runner import run_workload
from kcore.testing.ports import free_port

SCHEMA_VERSION = 1
MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class Config:
    """``target``: a name of ``brokers.targets()``; ``build``: the kcore build
    (kcore/bench/builds.py) a compare runs, None for this checkout's."""
    label: str
    target: str = "kcore"
    setup: Setup = Setup()
    workload_changes: tuple = ()
    build: object = None


def _kcore(label: str, **setup) -> Config:
    return Config(label, "kcore", Setup(name=label, **setup))


def peers_sweep() -> list[Config]:
    return [Config("kcore"), Config("kafka09", "kafka09"), Config("tansu", "tansu"), Config("noida", "noida")]


def durability_sweep() -> list[Config]:
    fsync = (("durability", "fsync"),)
    return [Config("kcore page-cache"), Config("kcore fsync", workload_changes=fsync),
            Config("kafka09 page-cache", "kafka09"), Config("kafka09 fsync", "kafka09", workload_changes=fsync)]


def disk_sweep() -> list[Config]:
    return [_kcore("page-cache"),
            Config("fsync", workload_changes=(("durability", "fsync"),)),
            _kcore("segment-16MiB", overrides=(("log.segment.bytes", str(16 * MIB)),)),
            _kcore("segment-128MiB", overrides=(("log.segment.bytes", str(128 * MIB)),)),
            # Segments fallocated whole when made, so ext4 need not reserve
            # blocks on each write (delayed allocation, ~10% of a produce
            # profile's kernel samples); measured no cheaper per GB here
            # (docs/performance.md).
            _kcore("preallocate", overrides=(("log.preallocate", "true"),)),
            _kcore("cold-reads", cold_reads=True),
            _kcore("tmpfs", storage="tmpfs")]


def network_sweep() -> list[Config]:
    return [_kcore("loopback"), _kcore("veth", network="veth"),
            _kcore("veth netem +1ms", network="veth", delay_ms=1.0),
            _kcore("proxy", network="proxy"),
            _kcore("proxy +1ms", network="proxy", delay_ms=1.0),
            _kcore("proxy +5ms", network="proxy", delay_ms=5.0),
            _kcore("proxy 1Gbit", network="proxy", rate_mbit=1000.0)]


def codecs_sweep() -> list[Config]:
    configs = []
    for payload in ("json-logs", "text", "random"):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            configs.append(Config(f"{payload} {codec}",
                                  workload_changes=(("payload", payload), ("codec", codec))))
    return configs


def processes_sweep() -> list[Config]:
    """kcore on 1, 2, 4 and 8 broker processes (num.processes) and on one
    per core ("auto") beside the in-memory peers; kcore on tmpfs, so disk
    speed does not hide the cores."""
    configs = [_kcore(f"kcore x{n}" if n != "auto" else "kcore auto", storage="tmpfs",
                      overrides=(("num.processes", n),)) for n in ("1", "2", "4", "8", "auto")]
    return configs + [Config("noida", "noida"), Config("tansu", "tansu")]  # in memory anyway


def metrics_sweep() -> list[Config]:
    """http.listeners on (port 0: no clash with a broker on 9644) and off;
    off also drops the per-request observer (latency, error codes)."""
    return [_kcore("metrics on", overrides=(("http.listeners", "http://127.0.0.1:0"),)),
            _kcore("metrics off", overrides=(("http.listeners", ""),))]


def security_sweep() -> list[Config]:
    """The same listener as PLAINTEXT, SSL and SASL_SSL (PLAIN): what TLS
    costs per byte (and a fetch without sendfile), and SASL on top."""
    return [_kcore(protocol, security=protocol) for protocol in ("PLAINTEXT", "SSL", "SASL_SSL")]


SWEEPS = {"peers": peers_sweep, "durability": durability_sweep, "disk": disk_sweep,
          "network": network_sweep, "codecs": codecs_sweep, "processes": processes_sweep,
          "metrics": metrics_sweep, "security": security_sweep}


class Sweep:
    """Runs configs x workloads x rounds and appends records to ``out``.
    Not thread-safe; one sweep at a time per harness."""

    def __init__(self, name: str, configs: list[Config], workloads: list, out: Path,
                 rounds: int = 1, progress: bool = False, profile_dir: Path | None = None,
                 settler: Settler | None = None, per_workload: bool = False):
        self.name, self.configs, self.workloads = name, configs, workloads
        self.out, self.rounds, self.progress = Path(out), rounds, progress
        self.targets = brokers.targets(profile_dir)
        self.settler = settler or Settler()
        self.per_workload = per_workload
        self.sweep_id = f"{name}-{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        self.machine = measure.machine()
        self._client_versions: dict[str, dict] = {}
        self._install_failures: dict[str, str] = {}
        self._settled: dict = {}

    def run(self) -> list[dict]:
        records = []
        self._install()
        self.settler.begin()
        for round_index in range(self.rounds):
            for tag, config, workloads in self._schedule(round_index):
                for record in self._run_config(config, round_index, tag, workloads):
                    self._write(record)
                    records.append(record)
        return records

    def _schedule(self, round_index: int):
        """(tag, config, workloads for one broker) in this round's order."""
        order = list(enumerate(self.configs if round_index % 2 == 0 else self.configs[::-1]))
        if self.per_workload:
            return [(tag, config, [workload]) for workload in self.workloads for tag, config in order]
        groups: dict = {}
        for workload in self.workloads:
            groups.setdefault(workload.broker_shape, []).append(workload)
        return [(tag, config, group) for tag, config in order for group in groups.values()]

    def _target(self, config: Config):
        if config.build is None:
            return self.targets[config.target]
        return brokers.Kcore(build=config.build)

    def _install(self) -> None:
        for name in sorted({config.target for config in self.configs}):
            try:
                self.targets[name].install()
            except (OSError, subprocess.SubprocessError) as error:
                self._install_failures[name] = f"install failed: {error}"

    def _write(self, record: dict) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with open(self.out, "a") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")

    def _run_config(self, config: Config, round_index: int, tag: int, workloads: list) -> list[dict]:
        target = self._target(config)
        workloads = [w.with_changes(**dict(config.workload_changes)) for w in workloads]
        self._settled = {}
        if config.target in self._install_failures:
            return [self._record(config, target, w, round_index, "skipped",
                                 self._install_failures[config.target]) for w in workloads]
        workdir = Path(tempfile.mkdtemp(prefix="kcore-bench-"))
        environment = _Environment(config.setup, workdir, tag, workloads)
        records: list[dict] = []
        running = None
        try:
            for workload in workloads:
                target.check(config.setup, workload)
            self._settled = self.settler.settle()
            environment.enter()
            running = environment.start(target, workloads[0])
            for workload in workloads:
                records.append(self._one(config, target, running, workload, round_index, workdir))
            kernels = measure.native_dirs(running.pids)
            for record in records:
                record["broker_kernels"] = kernels
        except Exception as error:  # noqa: BLE001 - recorded, and the sweep goes on
            status = "skipped" if isinstance(error, Unsupported) else "failed"
            done = {r["workload"]["name"] for r in records}
            records += [self._record(config, target, w, round_index, status, str(error)[-1500:])
                        for w in workloads if w.name not in done]
        finally:
            if running is not None:
                running.stop()
            environment.exit()
            brokers.remove_tree(workdir)
        return records

    def _one(self, config, target, running, workload, round_index: int, workdir: Path) -> dict:
        try:
            metrics = run_workload(target, running, config.setup, workload, workdir, self.progress)
        except Exception as error:  # noqa: BLE001 - any failure is this run's result, not the sweep's end
            return self._record(config, target, workload, round_index, "failed",
                                f"{type(error).__name__}: {str(error)[-1500:]}")
        record = self._record(config, target, workload, round_index, "ok", None)
        record["metrics"] = metrics
        return record

    def _record(self, config, target, workload, round_index: int, status: str, reason) -> dict:
        return {"schema": SCHEMA_VERSION, "run_id": uuid.uuid4().hex, "sweep": self.name,
                "sweep_id": self.sweep_id, "round": round_index,
                "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "config": config.label, "target": target.name, "target_version": target.version(),
                "setup": config.setup.to_dict(), "workload": workload.to_dict(),
                "durability_via": _durability_via(target, workload),
                "machine": self.machine, "client": self._client(target),
                "build": config.build.to_dict() if config.build is not None else None,
                "settle": self._settled, "status": status, "reason": reason, "metrics": {}}

    def _client(self, target) -> dict:
        python = target.client_python()
        if python not in self._client_versions:
            self._client_versions[python] = _client_versions(python)
        return {**self._client_versions[python], "settings": target.client_config}


def _durability_via(target, workload) -> str | None:
    if workload.durability != "fsync":
        return None
    if target.name in ("kcore", "kafka09"):
        return "log.flush.interval.messages=1 (flush every message before the ack)"
    return None


def _client_versions(python: str) -> dict:
    # confluent_kafka.version() is a string in 2.16 and a (string, int) tuple in 2.0.
    code = ("import confluent_kafka as c; v = c.version(); "
            "print(v if isinstance(v, str) else v[0], c.libversion()[0])")
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        version, librdkafka = done.stdout.split()
    except (OSError, ValueError, subprocess.SubprocessError):
        return {"library": "confluent-kafka", "version": "unknown", "librdkafka": "unknown"}
    return {"library": "confluent-kafka", "version": version, "librdkafka": librdkafka}


if TYPE_CHECKING:  # imported where used: it needs root tools
    from kcore.bench.network import NetnsPair


class _Environment:
    """Storage and network around one broker start: a tmpfs mount, a netns
    pair, a delaying proxy. ``exit`` undoes whatever ``enter``/``start`` made."""

    def __init__(self, setup: Setup, workdir: Path, tag: int, workloads: list):
        self.setup, self.workdir, self.tag, self.workloads = setup, workdir, tag, workloads
        self.mounted: Path | None = None
        self.netns: NetnsPair | None = None
        self.proxy: subprocess.Popen | None = None

    def enter(self) -> None:
        if self.setup.storage == "tmpfs":
            self._mount_tmpfs()
        if self.setup.network == "veth":
            from kcore.bench.network import NetnsPair, NetnsUnavailable
            try:
                self.netns = netns = NetnsPair(self.tag).create()
            except NetnsUnavailable as error:
                raise Unsupported(f"network namespaces not permitted here: {error}") from error
            if self.setup.delay_ms:
                try:
                    netns.add_netem_delay(self.setup.delay_ms)
                except NetnsUnavailable as error:
                    raise Unsupported(f"no tc netem in this kernel ({error}); "
                                      "the proxy configs add delay instead") from error

    def _mount_tmpfs(self) -> None:
        mount_point = self.workdir / "tmpfs"
        mount_point.mkdir()
        size = sum(w.total_messages * w.message_bytes for w in self.workloads) * 3 // 2 + 256 * MIB
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise Unsupported(f"cannot mount a tmpfs: {done.stderr.strip()}")
        self.mounted = mount_point

    def start(self, target, workload):
        workdir = self.mounted or self.workdir
        if self.netns is not None:
            running = target.start(workdir, self.setup, workload, host=self.netns.server_ip,
                                   prefix=self.netns.exec_prefix(self.netns.server_ns))
            running.client_netns = self.netns.client_ns
            return running
        if self.setup.network == "proxy":
            return self._start_behind_proxy(target, workdir, workload)
        return target.start(workdir, self.setup, workload)

    def _start_behind_proxy(self, target, workdir: Path, workload):
        import sys
        proxy_port = free_port()
        running = target.start(workdir, self.setup, workload, advertised=f"127.0.0.1:{proxy_port}")
        broker_address = _listener_address(running)
        log_path = self.workdir / "proxy.log"
        self.proxy = proxy = procs.spawn([sys.executable, "-m", "kcore.bench.proxy", "--listen-port", str(proxy_port),
                                  "--target", broker_address, "--delay-ms", str(self.setup.delay_ms),
                                  "--rate-mbit", str(self.setup.rate_mbit)], log_path)
        procs.wait_for_port("127.0.0.1", proxy_port, proxy, 30, log_path=log_path)
        return running

    def exit(self) -> None:
        procs.stop(self.proxy)
        if self.netns is not None:
            self.netns.close()
        if self.mounted is not None:
            subprocess.run(["umount", "-l", str(self.mounted)], capture_output=True)


def _listener_address(running) -> str:
    process = running.processes[0]
    for arg in process.args:
        if isinstance(arg, str) and arg.startswith("listeners=PLAINTEXT://"):
            return arg.split("//", 1)[1]
    raise RuntimeError("no listener address on the broker's command line")

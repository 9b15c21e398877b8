"""One node on every core: a supervisor and ``num.processes`` brokers.

Measured reason (16 cores, docs/performance.md#on-16-cores): one broker
process tops out at about one core; the node's cores serve it only as
several processes. They share
nothing on the data path: process ``i`` is a full broker with its own
``broker.id`` (the node's + i), listener ports (the node's + i, advertised
ones and the http.listeners of /metrics too), log dirs (``<log dir>/process-<i>``: its own checkpoints, lock
and journal, so a process is exactly a broker and changing the count only
moves directories) and ``broker.rack`` (the node's, or ``node-<broker.id>``:
replicas of a partition land on different nodes). Metadata names every
process, so clients send each partition's requests straight to its owner.

Without ZooKeeper the supervisor is the node's controller (NodeController,
over the node's metadata file) and tells its processes with the
controller-to-broker requests; with ``zookeeper.connect`` every process is
a broker of the cluster and the supervisor only runs them.

The supervisor forwards SIGTERM/SIGINT (each process stops cleanly),
restarts a process that dies (1 s, doubling up to 30 s, logged), and exits
with status 2 and one sentence when a process cannot start.

Not thread-safe: one event loop.
"""
from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from kcore.client.inter_broker import set_inter_broker_security
from kcore.config import BrokerConfig, split_http_listener, split_listener
from kcore.controller.local import META_PROPERTIES, new_cluster_id, read_meta_properties, write_meta_properties
from kcore.controller.node import NodeController
from kcore.log.relocate import find_partitions, relocate
from kcore.metadata import BrokerInfo
from kcore.server.security import inter_broker_security

log = logging.getLogger(__name__)

PROCESS_DIR = "process-{index}"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
STARTUP_TIMEOUT_S = 60.0
RESTART_BACKOFF_S = (1.0, 30.0)  # first wait, longest wait
# Environment of a managed process: the supervisor to wake after a topic
# change, and the node's first log dir (its metadata file).
SUPERVISOR_PID_ENV = "KCORE_SUPERVISOR_PID"
# Set for the processes of a node whose listener setting is left at its
# default (each process has them all in its overrides): a default port that
# is taken leaves that process without the listener, as one broker's default
# would, while a port the operator chose stops the broker (see
# ``operator_set``).
DEFAULT_LISTENER_ENVS = {"http.listeners": "KCORE_HTTP_LISTENERS_DEFAULT",
                         "schema.registry.listeners": "KCORE_REGISTRY_LISTENERS_DEFAULT"}
NODE_DIR_ENV = "KCORE_NODE_DIR"


def operator_set(config: BrokerConfig, key: str) -> bool:
    """Whether the operator chose ``key`` (one of DEFAULT_LISTENER_ENVS), in
    this process's config or its node's: a listener they chose that cannot
    bind stops the broker, as Kafka's listeners do."""
    return key in config.originals and DEFAULT_LISTENER_ENVS[key] not in os.environ


class StartupError(Exception):
    """A process could not start; the message is the sentence to print."""


@dataclass
class ProcessSpec:
    index: int
    info: BrokerInfo
    settings: dict[str, str]
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0


class Supervisor:
    def __init__(self, config: BrokerConfig, count: int, config_path: str | None = None):
        self.config = config
        self.count = count
        self.config_path = config_path
        self.node_dir = config.log_dirs[0]
        self.with_zookeeper = bool(config["zookeeper.connect"])
        # The node's controller channels reach the processes on their inter-broker listener.
        set_inter_broker_security(inter_broker_security(config))
        self.specs = [self._spec(index) for index in range(count)]
        self.controller = None if self.with_zookeeper else NodeController(
            self.node_dir, [s.info for s in self.specs])
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()

    def _spec(self, index: int) -> ProcessSpec:
        config = self.config
        listeners = [_shift(item, index) for item in config["listeners"]]
        settings = dict(config.originals)
        settings.update({
            "broker.id": str(config.broker_id + index), "num.processes": "1",
            "listeners": ",".join(listeners),
            "log.dirs": ",".join(str(d / PROCESS_DIR.format(index=index)) for d in config.log_dirs),
            "broker.rack": config["broker.rack"] or f"node-{config.broker_id}"})
        settings.pop("log.dir", None)
        settings.pop("node.id", None)
        settings["http.listeners"] = ",".join(_shift_http(item, index) for item in config["http.listeners"])
        settings["schema.registry.listeners"] = _registry_listeners(config, index)
        if config["advertised.listeners"]:
            settings["advertised.listeners"] = ",".join(
                _shift(item, index) for item in config["advertised.listeners"])
        host, port = BrokerConfig(settings).advertised_address()
        return ProcessSpec(index, BrokerInfo(config.broker_id + index, host, port,
                                             settings["broker.rack"]), settings)

    # -- running ---------------------------------------------------------------------------
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        loop.add_signal_handler(signal.SIGUSR1, self._changed.set)
        try:
            self._check_ports()
            self._prepare_dirs()
            if self.controller is not None:
                self.controller.start()
            await asyncio.gather(*(self._start(spec) for spec in self.specs))
            if self.controller is not None:
                await self._wait_delivered()
        except (StartupError, OSError) as exc:
            print(f"kcore broker: cannot start: {exc}", file=sys.stderr)
            await self._stop_all()
            return 2
        log.info("node %d serves with %d processes (broker ids %d-%d)", self.config.broker_id,
                 self.count, self.specs[0].info.broker_id, self.specs[-1].info.broker_id)
        watchers = [loop.create_task(self._watch(spec)) for spec in self.specs]
        changes = loop.create_task(self._relay_changes())
        await self._stopping.wait()
        for task in (*watchers, changes):
            task.cancel()
        await self._stop_all()
        return 0

    def _check_ports(self) -> None:
        for spec in self.specs:
            for item in spec.settings["listeners"].split(","):
                _, host, port = split_listener(item)
                if port and not _port_free(host, port):
                    raise StartupError(f"port {port} of broker process {spec.index} "
                                       f"(listeners={item}) is in use")

    def _prepare_dirs(self) -> None:
        """Cluster id and meta.properties of each process; without
        ZooKeeper, partitions moved to the process that serves them now."""
        self.node_dir.mkdir(parents=True, exist_ok=True)
        node = read_meta_properties(self.node_dir / META_PROPERTIES)
        cluster_id = node.get("cluster.id") or new_cluster_id()
        if not node:
            write_meta_properties(self.node_dir / META_PROPERTIES, self.config.broker_id, cluster_id)
        for spec in self.specs:
            for directory in spec.settings["log.dirs"].split(","):
                path = Path(directory)
                path.mkdir(parents=True, exist_ok=True)
                if not (path / META_PROPERTIES).exists() and not self.with_zookeeper:
                    write_meta_properties(path / META_PROPERTIES, spec.info.broker_id, cluster_id)
        if self.controller is None:
            return
        owners = self.controller.prepare()
        by_id = {spec.info.broker_id: spec for spec in self.specs}
        searched = [d for base in self.config.log_dirs for d in [base, *sorted(base.glob("process-*"))]]
        wanted = {key: _base_of(directory, self.config.log_dirs) / PROCESS_DIR.format(
                      index=by_id[owners[key]].index)
                  for key, directory in find_partitions(searched).items() if key in owners}
        moved = relocate(wanted, searched)
        if moved:
            log.info("moved %d partitions to the processes that serve them now", moved)

    async def _start(self, spec: ProcessSpec) -> None:
        command = [sys.executable, "-m", "kcore.cli.main", "broker"]
        if self.config_path:
            command += ["--config", self.config_path]
        for key, value in spec.settings.items():
            command += ["--override", f"{key}={value}"]
        env = {**os.environ, SUPERVISOR_PID_ENV: str(os.getpid()), NODE_DIR_ENV: str(self.node_dir)}
        env.update({name: "1" for key, name in DEFAULT_LISTENER_ENVS.items()
                    if key not in self.config.originals})
        spec.process = await asyncio.create_subprocess_exec(*command, env=env,
                                                            preexec_fn=_die_with_parent)
        await self._wait_listening(spec)
        if self.controller is not None:
            self.controller.process_up(spec.info.broker_id)

    async def _wait_delivered(self) -> None:
        assert self.controller is not None
        try:
            await asyncio.wait_for(self.controller.delivered(), STARTUP_TIMEOUT_S)
        except TimeoutError:
            raise StartupError(f"the broker processes did not take the node's metadata within "
                               f"{STARTUP_TIMEOUT_S:g} s") from None

    async def _wait_listening(self, spec: ProcessSpec) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_TIMEOUT_S
        while loop.time() < deadline:
            if spec.process is not None and spec.process.returncode is not None:
                raise StartupError(f"broker process {spec.index} (broker.id "
                                   f"{spec.info.broker_id}) exited with status "
                                   f"{spec.process.returncode}")
            try:
                _, writer = await asyncio.open_connection(spec.info.host, spec.info.port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.05)
        raise StartupError(f"broker process {spec.index} did not listen on "
                           f"{spec.info.host}:{spec.info.port} within {STARTUP_TIMEOUT_S:g} s")

    async def _watch(self, spec: ProcessSpec) -> None:
        """Restart the process when it dies, with a growing pause."""
        wait = RESTART_BACKOFF_S[0]
        while True:
            assert spec.process is not None
            status = await spec.process.wait()
            if self._stopping.is_set():
                return
            log.error("broker process %d (broker.id %d) died with status %d; restarting in %g s",
                      spec.index, spec.info.broker_id, status, wait)
            if self.controller is not None:
                self.controller.process_down(spec.info.broker_id)
            await asyncio.sleep(wait)
            wait = min(wait * 2, RESTART_BACKOFF_S[1])
            spec.restarts += 1
            try:
                await self._start(spec)
                wait = RESTART_BACKOFF_S[0]
            except StartupError as exc:
                log.error("%s", exc)

    async def _relay_changes(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            if self.controller is not None:
                self.controller.on_store_changed()

    async def _stop_all(self) -> None:
        running = [s.process for s in self.specs if s.process and s.process.returncode is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.gather(*(p.wait() for p in running)), 60)
        except TimeoutError:
            for process in running:
                if process.returncode is None:
                    process.kill()
        if self.controller is not None:
            self.controller.close()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the supervisor dies (Linux
    PR_SET_PDEATHSIG), so a killed supervisor leaves no orphan brokers; the
    SIGTERM stops each cleanly."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the supervisor's own SIGTERM handling still stops them


def _shift(listener: str, index: int) -> str:
    name, host, port = split_listener(listener)
    host = f"[{host}]" if ":" in host else host
    return f"{name}://{host}:{port + index if port else 0}"


def _shift_http(listener: str, index: int) -> str:
    host, port = split_http_listener(listener)
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port + index if port else 0}"


def _registry_listeners(config: BrokerConfig, index: int) -> str:
    """Process ``index``'s schema registry listeners. Set in the node's
    config they are its own, shifted, and a taken port stops that process;
    left at the default, a shifted port that is taken is left out, as one
    broker leaves out a default port that is taken (broker.py)."""
    shifted = [_shift_http(item, index) for item in config["schema.registry.listeners"]]
    if "schema.registry.listeners" in config.originals:
        return ",".join(shifted)
    free = [item for item in shifted if _port_free(*split_http_listener(item))]
    for item in sorted(set(shifted) - set(free)):
        log.warning("schema.registry.listeners: %s is taken; process %d does not serve the registry there",
                    item, index)
    return ",".join(free)


def _base_of(directory: Path, bases: list[Path]) -> Path:
    for base in bases:
        if directory == base or directory.parent == base:
            return base
    return bases[0]


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host or "0.0.0.0", port))
            return True
        except OSError:
            return False

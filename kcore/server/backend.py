"""The three ways a broker runs, decided once: a single node, one process
of a node of processes, or a broker of a ZooKeeper cluster.

``cluster_mode(config)`` picks the mode from ``zookeeper.connect`` and
the environment a node's supervisor gives its processes
(server/supervisor.py); the broker asks the mode what differs, and its
``build`` makes, once, the parts that differ:

| | controller | stores (metadata_store/) | peers | replicas |
|---|---|---|---|---|
| single node | LocalController | files in the data dir | no | one |
| node of processes | ManagedController | files in the node's dir, shared | the node's processes | one |
| ZooKeeper cluster | ZkController | Kafka's znodes | the cluster's brokers | as configured |

``peers``: other brokers connect here and this broker to them, so it logs
in as the inter-broker principal. ``replicated``: partitions have
followers on other brokers, so there are fetchers, ISR changes proposed to
the controller, logs of topics deleted while this broker was down, and
internal topics with their configured replication factor. A node of
processes with ZooKeeper is a ZooKeeper cluster: every process is one of
its brokers.
"""
from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from kcore.config import BrokerConfig
from kcore.controller.active import ControllerConfig
from kcore.controller.base import Controller, ControllerEvents
from kcore.controller.local import LocalController
from kcore.controller.managed import ManagedController
from kcore.controller.zk_controller import ZkController
from kcore.log.relocate import find_partitions, relocate
from kcore.metadata import BrokerInfo
from kcore.metadata_store.base import CredentialStore, ProducerIdSource, SecurityStore
from kcore.metadata_store.file import FileCredentialStore, FileProducerIdManager, FileSecurityStore
from kcore.metadata_store.zookeeper import ZkCredentialStore, ZkProducerIdManager, ZkSecurityStore
from kcore.server.supervisor import NODE_DIR_ENV, SUPERVISOR_PID_ENV

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backend:
    """The parts of a broker that its mode decides (see module doc)."""
    controller: Controller
    security_store: SecurityStore
    scram_credentials: CredentialStore
    producer_ids: ProducerIdSource


class ClusterMode(ABC):
    """What a mode decides (see module doc); ``build`` runs once."""
    name = ""
    peers = False
    replicated = False

    def __init__(self, config: BrokerConfig):
        self.config = config

    def prepare_log_dirs(self) -> None:
        """Before the logs open: move partitions to where this mode keeps them."""
        return None

    @abstractmethod
    def build(self, broker: BrokerInfo, events: ControllerEvents) -> Backend:
        """The controller, stores and producer-id source of this mode."""


class SingleNode(ClusterMode):
    """No ZooKeeper, one process: everything in the first log dir."""
    name = "single node"

    def prepare_log_dirs(self) -> None:
        gather_process_dirs(self.config.log_dirs)

    def build(self, broker: BrokerInfo, events: ControllerEvents) -> Backend:
        directory = self.config.log_dirs[0]
        return Backend(LocalController(directory, broker, events), FileSecurityStore(directory),
                       FileCredentialStore(directory), FileProducerIdManager(directory))


class NodeOfProcesses(ClusterMode):
    """One broker process of a node without ZooKeeper: the node's stores
    in its first log dir, shared by every process, and its supervisor as
    controller (which placed every partition before this process started)."""
    name = "node of processes"
    peers = True

    def __init__(self, config: BrokerConfig, node_dir: Path, supervisor_pid: int):
        super().__init__(config)
        self.node_dir = node_dir
        self.supervisor_pid = supervisor_pid

    def build(self, broker: BrokerInfo, events: ControllerEvents) -> Backend:
        controller = ManagedController(self.node_dir, self.config.log_dirs[0], broker, events,
                                       self.supervisor_pid)
        return Backend(controller, FileSecurityStore(self.node_dir),
                       FileCredentialStore(self.node_dir), FileProducerIdManager(self.node_dir))


class ZooKeeperCluster(ClusterMode):
    """A broker of a cluster: metadata in ZooKeeper (zookeeper.connect)."""
    name = "ZooKeeper cluster"
    peers = True
    replicated = True

    def build(self, broker: BrokerInfo, events: ControllerEvents) -> Backend:
        config = self.config
        connection_ms = config["zookeeper.connection.timeout.ms"]
        controller = ZkController(
            config["zookeeper.connect"], broker, config.log_dirs[0], events,
            ControllerConfig(config["unclean.leader.election.enable"],
                             config["auto.leader.rebalance.enable"],
                             config["leader.imbalance.check.interval.seconds"],
                             config["leader.imbalance.per.broker.percentage"]),
            session_timeout_s=config["zookeeper.session.timeout.ms"] / 1000,
            connection_timeout_s=connection_ms / 1000 if connection_ms else None,
            controlled_shutdown=config["controlled.shutdown.enable"],
            controlled_shutdown_retries=config["controlled.shutdown.max.retries"],
            controlled_shutdown_backoff_s=config["controlled.shutdown.retry.backoff.ms"] / 1000)
        return Backend(controller, ZkSecurityStore(controller.zk), ZkCredentialStore(controller.zk),
                       ZkProducerIdManager(controller.zk, config.broker_id))


def cluster_mode(config: BrokerConfig) -> ClusterMode:
    if config["zookeeper.connect"]:
        return ZooKeeperCluster(config)
    node_dir = os.environ.get(NODE_DIR_ENV)
    supervisor_pid = os.environ.get(SUPERVISOR_PID_ENV)
    if node_dir and supervisor_pid:
        return NodeOfProcesses(config, Path(node_dir), int(supervisor_pid))
    return SingleNode(config)


def gather_process_dirs(log_dirs: list[Path]) -> None:
    """A node that ran several processes and now runs one: every partition
    moves back from ``<log dir>/process-<i>`` into its log dir."""
    searched = [d for base in log_dirs for d in [base, *sorted(base.glob("process-*"))]]
    if len(searched) == len(log_dirs):
        return
    wanted = {key: (directory if directory in log_dirs else directory.parent)
              for key, directory in find_partitions(searched).items()}
    moved = relocate(wanted, searched)
    if moved:
        log.info("gathered %d partitions of earlier broker processes", moved)

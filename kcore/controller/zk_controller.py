"""The controller seam of a broker in a ZooKeeper cluster.

Every broker of a cluster has one ``ZkController``. It:

- checks the cluster id (``/cluster/id`` against ``meta.properties``: a
  data dir of another cluster is refused, as Kafka does);
- keeps a cache of topics (assignment, id, configs) fed by watches on
  ``/brokers/topics`` and each topic's znodes, and tells its broker of
  config changes (``/config/changes`` notifications);
- registers the broker (ephemeral ``/brokers/ids/N``; its czxid is the
  broker epoch) once the broker listens, and again under each new
  session after an expiry;
- campaigns for ``/controller``: the broker that creates it runs the
  ``ActiveController`` (active.py) until its session ends;
- writes topic changes straight to ZooKeeper, as Kafka's AdminZkClient
  does from any broker: the active controller picks them up by its watches;
  without ZooKeeper they fail with MetadataUnavailableError (Kafka's
  broker blocks until ZooKeeper returns, and its client times out);
- sends what only the active controller may decide (AlterPartition,
  ControlledShutdown, ElectLeaders, partition reassignments) to it over
  the Kafka protocol (controller_client.py), itself included;
- announces a failed log dir of its broker under
  ``/log_dir_event_notification`` (active.py takes it from there).

Not thread-safe: owned by the broker's event loop; ZooKeeper callbacks
arrive there (kcore/metadata_store/zk_client.py).
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kcore.controller import zk_paths as paths
from kcore.controller import zk_state
from kcore.controller.active import ActiveController, ControllerConfig
from kcore.controller.base import ControllerEvents, IsrChange
from kcore.controller.controller_client import ControllerClient
from kcore.controller.local import META_PROPERTIES, new_cluster_id, read_meta_properties, write_meta_properties
from kcore.controller.placement import assign_replicas, validate_counts
from kcore.controller.reassignment import ReplicaAssignment
from kcore.metadata import (
    BrokerInfo,
    PartitionState,
    TopicError,
    TopicInfo,
    TopicPartition,
    validate_topic_name,
)
from kcore.metadata_store.zk_client import (
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SessionEvent,
    Watch,
    ZkClient,
    ZkError,
    needs_zookeeper,
)
from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

# Registration retries while a predecessor's ephemeral /brokers/ids/N (same
# id, older session) waits for its session to expire.
REGISTRATION_POLL_S = 0.5


class ClusterIdMismatch(Exception):
    """The data dir belongs to another cluster."""


class ZkController:
    def __init__(self, connect: str, broker: BrokerInfo, data_dir: Path,
                 events: ControllerEvents, config: ControllerConfig, *,
                 session_timeout_s: float = 18.0, connection_timeout_s: float | None = None,
                 controlled_shutdown: bool = True, controlled_shutdown_retries: int = 3,
                 controlled_shutdown_backoff_s: float = 5.0):
        self.zk = ZkClient(connect, session_timeout_s=session_timeout_s,
                           connection_timeout_s=connection_timeout_s)
        self.broker = broker
        self.broker_id = broker.broker_id
        self.broker_epoch = -1
        self.data_dir = Path(data_dir)
        self.events = events
        self.config = config
        self.session_timeout_s = session_timeout_s
        self.cluster_id = ""
        self.controller_id = -1
        self.active: ActiveController | None = None
        self.client = ControllerClient(self)
        self._controlled_shutdown = controlled_shutdown
        self._shutdown_retries = controlled_shutdown_retries
        self._shutdown_backoff_s = controlled_shutdown_backoff_s
        self._topics: dict[str, TopicInfo] = {}
        self._topic_watches: dict[str, list[Watch]] = {}
        self._watches: list[Watch] = []
        self._last_config_change = -1
        self._registered = False
        self._stopping = False
        self.controller_changed = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect, check the cluster id, load the topics (before the broker
        listens; ``register`` comes after)."""
        await self.zk.start()
        for path in paths.PERSISTENT_PATHS:
            try:
                await self.zk.create(path, makepath=True)
            except NodeExistsError:
                pass
        self.cluster_id = await self._cluster_id()
        self._watches.append(await self.zk.watch_children(paths.TOPICS, self._on_topics))
        await self._load_topics(await self.zk.get_children(paths.TOPICS))
        changes = await self.zk.get_children(paths.CONFIG_CHANGES)
        self._last_config_change = max((_sequence(c) for c in changes), default=-1)
        self._watches.append(await self.zk.watch_children(paths.CONFIG_CHANGES,
                                                          self._on_config_changes))
        self.zk.add_session_listener(self._on_session_event)

    async def register(self) -> None:
        """Announce the (listening) broker and campaign for controller."""
        await self._register_broker()
        self._watches.append(await self.zk.watch_data(paths.CONTROLLER, self._on_controller))

    async def shutdown(self) -> None:
        self._stopping = True
        if self._registered and self._controlled_shutdown:
            await self._controlled_shutdown_with_retries()
        if self.active is not None:
            self.active.stop()
        for watch in [*self._watches, *(w for ws in self._topic_watches.values() for w in ws)]:
            watch.cancel()
        await self.client.close()
        await self.zk.close()

    async def _cluster_id(self) -> str:
        local = read_meta_properties(self.data_dir / META_PROPERTIES)
        try:
            data, _ = await self.zk.get(paths.CLUSTER_ID)
            cluster_id = paths.decode_cluster_id(data)
        except NoNodeError:
            cluster_id = local.get("cluster.id") or new_cluster_id()
            try:
                await self.zk.create(paths.CLUSTER_ID, paths.encode_cluster_id(cluster_id))
            except NodeExistsError:
                data, _ = await self.zk.get(paths.CLUSTER_ID)
                cluster_id = paths.decode_cluster_id(data)
        if local.get("cluster.id") not in (None, cluster_id):
            raise ClusterIdMismatch(
                f"{self.data_dir} belongs to cluster {local['cluster.id']}, but ZooKeeper holds "
                f"cluster {cluster_id}")
        if local.get("broker.id") not in (None, str(self.broker_id)):
            raise ClusterIdMismatch(f"{self.data_dir} belongs to broker.id={local['broker.id']}")
        if not local:
            write_meta_properties(self.data_dir / META_PROPERTIES, self.broker_id, cluster_id)
        return cluster_id

    # -- registration and the controller election --------------------------------------------
    async def _register_broker(self) -> None:
        path = paths.broker_path(self.broker_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.session_timeout_s + 2
        while True:
            try:
                await self.zk.create(path, paths.encode_broker(self.broker), ephemeral=True)
                break
            except NodeExistsError:
                if loop.time() > deadline:
                    raise
                log.info("%s exists (an earlier session of this broker); waiting for it to expire",
                         path)
                await asyncio.sleep(REGISTRATION_POLL_S)
        stat = await self.zk.exists(path)
        self.broker_epoch = stat.czxid if stat is not None else -1
        self._registered = True
        log.info("registered broker %d at %s:%d (broker epoch %d)", self.broker_id,
                 self.broker.host, self.broker.port, self.broker_epoch)

    def _on_controller(self, data: bytes | None, stat: Any) -> None:
        self.controller_id = paths.decode_controller(data) if data else -1
        self.controller_changed.set()
        self.controller_changed = asyncio.Event()
        if data is None and not self._stopping and self._registered:
            asyncio.get_running_loop().create_task(self._campaign())
        elif self.controller_id != self.broker_id and self.active is not None:
            self.active.stop()
            self.active = None

    async def _campaign(self) -> None:
        try:
            epoch = await zk_state.register_controller(self.zk, paths.encode_controller(self.broker_id))
        except NodeExistsError:
            return  # another broker won; the watch tells us who
        except zk_state.ControllerMovedError as exc:
            # Nothing was written: the winner's /controller fires the watch.
            log.warning("controller election lost: %s", exc)
            return
        except ZkError as exc:
            # The transaction may have been applied with its answer lost: a
            # /controller naming us with no controller behind it would hold
            # the office until our session ends. Delete it if so (a new vote).
            log.warning("controller election failed: %s", exc)
            await self._give_up_controller()
            return
        active = ActiveController(self.zk, self.broker_id, self.config, self._unclean_allowed)
        active.on_resign = self._resigned
        self.active = active
        await active.start(epoch)

    def _resigned(self) -> None:
        self.active = None
        if not self._stopping:
            asyncio.get_running_loop().create_task(self._give_up_controller())

    async def _give_up_controller(self) -> None:
        """Delete our /controller znode so a working controller is elected."""
        try:
            data, _ = await self.zk.get(paths.CONTROLLER)
            if paths.decode_controller(data) == self.broker_id:
                await self.zk.delete(paths.CONTROLLER)
        except ZkError:
            pass

    def _on_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            log.warning("ZooKeeper session expired: this broker is unregistered until it "
                        "registers again")
            self._registered = False
            if self.active is not None:
                self.active.stop()
                self.active = None
        elif event is SessionEvent.NEW_SESSION and not self._stopping:
            asyncio.get_running_loop().create_task(self._reregister())

    async def _reregister(self) -> None:
        try:
            await self._register_broker()
            if self.controller_id < 0:
                await self._campaign()
        except ZkError as exc:
            log.error("registering again failed: %s", exc)

    # -- topic cache --------------------------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((info for info in self._topics.values() if info.topic_id == topic_id), None)

    def _on_topics(self, children: list[str]) -> None:
        names = set(children)
        for gone in set(self._topics) - names:
            self._forget_topic(gone)
        added = sorted(names - set(self._topics))
        if added:
            asyncio.get_running_loop().create_task(self._load_topics(added))

    async def _load_topics(self, names: Sequence[str]) -> None:
        for name in names:
            await self._load_topic(name)

    async def _load_topic(self, name: str) -> TopicInfo | None:
        info = await zk_state.read_topic(self.zk, name)
        if info is None:
            return None
        self._topics[name] = info
        if name not in self._topic_watches:
            self._topic_watches[name] = [await self.zk.watch_data(
                paths.topic_path(name), lambda data, stat: self._on_assignment(name, data))]
        return info

    def _on_assignment(self, name: str, data: bytes | None) -> None:
        info = self._topics.get(name)
        if data is None or info is None:
            return
        # The id too: the controller gives one to a topic created without.
        assignment, info.topic_id = paths.decode_assignment(data)
        info.assignment = assignment
        info.adding_replicas, info.removing_replicas = paths.decode_reassignments(data)
        info.num_partitions = len(assignment)

    def _forget_topic(self, name: str) -> None:
        self._topics.pop(name, None)
        for watch in self._topic_watches.pop(name, []):
            watch.cancel()

    async def refresh_topics(self, names: Sequence[str]) -> None:
        """Make sure the cache knows these topics (a LeaderAndIsr may come
        before this broker's own watch saw a new topic)."""
        for name in set(names):
            if name not in self._topics:
                await self._load_topic(name)

    def _on_config_changes(self, children: list[str]) -> None:
        new = sorted((c for c in children if _sequence(c) > self._last_config_change), key=_sequence)
        if new:
            self._last_config_change = _sequence(new[-1])
            asyncio.get_running_loop().create_task(self._apply_config_changes(new))

    async def _apply_config_changes(self, changes: list[str]) -> None:
        for change in changes:
            try:
                data, _ = await self.zk.get(f"{paths.CONFIG_CHANGES}/{change}")
                topic = paths.decode_config_change(data)
                if topic is None or topic not in self._topics:
                    continue
                data, _ = await self.zk.get(paths.topic_config_path(topic))
            except (NoNodeError, ValueError):
                continue
            self._topics[topic].configs = paths.decode_topic_config(data)
            self.events.on_topic_config_change(topic)

    def _unclean_allowed(self, topic: str) -> bool:
        info = self._topics.get(topic)
        value = info.configs.get("unclean.leader.election.enable") if info else None
        return self.config.unclean_leader_election if value is None else value == "true"

    # -- topic changes (any broker writes them) -------------------------------------------
    @needs_zookeeper
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str],
                           assignment: dict[int, list[int]] | None = None,
                           validate_only: bool = False) -> TopicInfo:
        validate_topic_name(name)
        # ZooKeeper, not the cache: a topic just deleted may linger there
        # until the watch tells.
        if await self.zk.exists(paths.topic_path(name)) is not None:
            queued = await self.zk.exists(paths.delete_topic_path(name)) is not None
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} "
                             + ("is marked for deletion" if queued else "already exists"))
        brokers = list((await zk_state.read_brokers(self.zk)).values())
        if assignment:
            _check_assignment(assignment.values(), {b.broker_id for b in brokers})
        else:
            assignment = assign_replicas(num_partitions, replication_factor, brokers)
        info = TopicInfo(name, uuid.uuid4(), len(assignment), len(assignment[0]), dict(configs),
                         {p: list(r) for p, r in assignment.items()})
        if validate_only:
            return info
        try:
            await self.zk.multi([
                CreateOp(paths.topic_config_path(name), paths.encode_topic_config(configs)),
                CreateOp(paths.topic_path(name), paths.encode_assignment(info.assignment,
                                                                          info.topic_id))])
        except NodeExistsError:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists") from None
        self._topics[name] = info
        return info

    @needs_zookeeper
    async def delete_topic(self, name: str) -> None:
        """Queue the deletion (``/admin/delete_topics/<t>``, as Kafka's
        AdminZkClient). The topic stays in the cache until the controller
        deletes it, which waits while a partition is being reassigned."""
        if await self.zk.exists(paths.topic_path(name)) is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        try:
            await self.zk.create(paths.delete_topic_path(name))
        except NodeExistsError:
            pass  # queued already: the caller waits for it like the first one

    @needs_zookeeper
    async def create_partitions(self, name: str, total: int,
                                assignment: list[list[int]] | None = None,
                                validate_only: bool = False) -> TopicInfo:
        try:
            data, stat = await self.zk.get(paths.topic_path(name))
        except NoNodeError:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"topic {name!r} does not exist") from None
        current, topic_id = paths.decode_assignment(data)
        if any(paths.decode_reassignments(data)):
            raise TopicError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                             f"partitions of {name!r} are being reassigned")
        if total <= len(current):
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {name!r} has {len(current)} partitions; the new count must "
                             f"be larger, got {total}")
        brokers = list((await zk_state.read_brokers(self.zk)).values())
        replication_factor = len(current[0])
        if assignment:
            if len(assignment) != total - len(current):
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"{len(assignment)} assignments for {total - len(current)} "
                                 "new partitions")
            _check_assignment(assignment, {b.broker_id for b in brokers})
            added = {len(current) + i: list(r) for i, r in enumerate(assignment)}
        else:
            added = assign_replicas(total - len(current), replication_factor, brokers,
                                    first_partition=len(current))
        info = self._topics.get(name) or TopicInfo(name, topic_id, len(current), replication_factor)
        if validate_only:
            return info
        merged = {**current, **added}
        try:
            await self.zk.set(paths.topic_path(name),
                              paths.encode_assignment(merged, topic_id),
                              version=stat.version)
        except ZkError as exc:
            raise TopicError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                             f"the assignment of {name!r} changed concurrently: {exc}") from None
        info.assignment, info.num_partitions = merged, total
        return info

    @needs_zookeeper
    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        if name not in self._topics:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        await self.zk.set(paths.topic_config_path(name), paths.encode_topic_config(configs))
        await self.zk.create(f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
                             paths.encode_config_change(name), sequential=True)
        self._topics[name].configs = dict(configs)

    # -- decisions of the active controller --------------------------------------------------
    def _active(self) -> ActiveController | None:
        """The ActiveController if this broker holds the office, else None."""
        return self.active if self.active is not None and self.active.active else None

    async def elect_leaders(self, election_type: int,
                            partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        active = self._active()
        if active is not None:
            return await active.elect_leaders(election_type, partitions)
        return await self.client.elect_leaders(election_type, partitions)

    async def alter_partition_reassignments(
            self, items: Sequence[tuple[TopicPartition, list[int] | None]],
            allow_replication_factor_change: bool = True
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        active = self._active()
        if active is not None:
            return await active.alter_reassignments(items, allow_replication_factor_change)
        return await self.client.alter_reassignments(items, allow_replication_factor_change)

    async def list_partition_reassignments(self, partitions: Sequence[TopicPartition] | None
                                           ) -> dict[TopicPartition, ReplicaAssignment]:
        active = self._active()
        if active is not None:
            return await active.list_reassignments(partitions)
        return await self.client.list_reassignments(partitions)

    async def send_alter_partition(self, items: Sequence[IsrChange]
                                   ) -> tuple[int, dict[TopicPartition, tuple[int, Any]]]:
        return await self.client.alter_partition(self.broker_epoch, items)

    async def alter_partition(self, broker_id: int, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, PartitionState | None]]]:
        active = self._active()
        try:
            if active is not None:
                return await active.alter_partition(broker_id, broker_epoch, items)
        except zk_state.ControllerMovedError:
            pass
        return ErrorCode.NOT_CONTROLLER, {}

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int
                                  ) -> tuple[int, list[TopicPartition]]:
        active = self._active()
        try:
            if active is not None:
                return await active.controlled_shutdown(broker_id, broker_epoch)
        except zk_state.ControllerMovedError:
            pass
        return ErrorCode.NOT_CONTROLLER, []

    async def propagate_log_dir_event(self) -> None:
        """A sequential ``/log_dir_event_notification`` znode naming this
        broker, which the active controller watches (Kafka's
        propagateLogDirEvent)."""
        try:
            await self.zk.create(f"{paths.LOG_DIR_EVENTS}/{paths.LOG_DIR_EVENT_PREFIX}",
                                 paths.encode_log_dir_event(self.broker_id), sequential=True)
        except ZkError as exc:
            log.error("cannot tell the controller that a log dir failed: %s", exc)

    async def _controlled_shutdown_with_retries(self) -> None:
        for attempt in range(1, self._shutdown_retries + 1):
            try:
                remaining = await self.client.controlled_shutdown(self.broker_epoch)
            except Exception as exc:  # controller unreachable: retry, then stop anyway
                log.warning("controlled shutdown attempt %d failed: %s", attempt, exc)
                remaining = None
            if remaining == []:
                log.info("controlled shutdown done: no partition is led here")
                return
            if remaining:
                log.info("controlled shutdown: %d partitions still led here", len(remaining))
            if attempt < self._shutdown_retries:
                await asyncio.sleep(self._shutdown_backoff_s)
        log.warning("controlled shutdown incomplete after %d attempts; stopping anyway",
                    self._shutdown_retries)


def _check_assignment(replica_lists, live: set[int]) -> None:
    sizes = set()
    for replicas in replica_lists:
        replicas = list(replicas)
        sizes.add(len(replicas))
        if not replicas or len(set(replicas)) != len(replicas):
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"replicas {replicas} are empty or repeat a broker")
        unknown = [r for r in replicas if r not in live]
        if unknown:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"brokers {unknown} are not registered")
    if len(sizes) > 1:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "every partition must have the same number of replicas")
    validate_counts(1, min(sizes) if sizes else 0, len(live))


def _sequence(child: str) -> int:
    try:
        return int(child.rsplit("_", 1)[-1])
    except ValueError:
        return -1

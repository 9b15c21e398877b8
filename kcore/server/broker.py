"""A single broker: listeners, request dispatch, background maintenance.

Start-up order: check the data dir, decide the cluster mode once
(server/backend.py: a single node, a node of processes or a ZooKeeper
cluster), open (and if the last stop was unclean, recover) every partition
log, build what the mode decides (controller, stores, producer ids), load
cluster metadata, then listen. Shutdown
reverses it and leaves `.kafka_cleanshutdown` so the next start skips
recovery.

Not thread-safe: everything runs on one event loop.
"""
from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import os
import time
from pathlib import Path

from kcore import protocol
from kcore.client.inter_broker import set_inter_broker_security
from kcore.client.security import ClientSecurity
from kcore.config import BrokerConfig, ConfigError, parse_topic_configs
from kcore.console.history import ConsoleHistory
from kcore.coordinator.group import GroupConfig, GroupCoordinator, GroupMetadataManager
from kcore.coordinator.group.end_offsets import RemoteEndOffsets
from kcore.coordinator.group.lag import SAMPLE_INTERVAL_S, ConsumerLag
from kcore.coordinator.share.service import ShareGroupService
from kcore.coordinator.txn.coordinator import TransactionCoordinator
from kcore.coordinator.txn.manager import TRANSACTION_STATE_TOPIC, TransactionStateManager, TxnConfig
from kcore.coordinator.txn.markers import MarkerSender
from kcore.dynamic_config import FOLLOWER_RATE, LEADER_RATE, DynamicBrokerConfig
from kcore.handlers import HANDLERS
from kcore.handlers.authz import client_host
from kcore.handlers.base import CloseConnection
from kcore.log import writeback
from kcore.log.cleaner import LogCleaner
from kcore.log.durability import GroupCommitSyncer, open_syncer
from kcore.log.manager import LogManager
from kcore.metadata import NO_TOPIC_ID, BrokerInfo, topic_id_to_string
from kcore.metadata_store.base import QuotaConfigs
from kcore.metrics import BrokerStats
from kcore.replication.alter_partition import AlterPartitionManager
from kcore.replication.fetcher import FetcherConfig, FetcherManager
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.replica_selector import replica_selector
from kcore.replication.txn_verifier import TransactionVerifier
from kcore.security.acl import CLUSTER_NAME, AclBinding, AclOperation, ResourceType
from kcore.security.authorizer import Authorizer
from kcore.security.quotas import ClientQuotas
from kcore.server import idle, request_quota
from kcore.server.backend import cluster_mode
from kcore.server.connection import ConnectionContext, KafkaConnection
from kcore.server.http_listener import HttpListeners
from kcore.server.limits import check_open_file_room, raise_open_file_limit
from kcore.server.registry_service import BrokerRegistry
from kcore.server.sasl import AuthFailures, SaslSettings
from kcore.server.security import inter_broker_security, sasl_settings, server_ssl_context
from kcore.server.sockets import apply_buffer_sizes, check_listening
from kcore.server.supervisor import NODE_DIR_ENV, operator_set
from kcore.tables.service import TableService
from kcore.tables.settings import CatalogSettings

log = logging.getLogger(__name__)
# One debug line per answered request (Kafka's kafka.request.logger).
request_log = logging.getLogger("kcore.server.requests")

# Producer state is snapshotted this often so that recovery after a crash
# replays at most this much of the log to rebuild it.
PRODUCER_SNAPSHOT_INTERVAL_S = 60.0
# A TLS peer silent this long in its handshake is dropped (a plaintext
# client on a TLS port that sends nothing); asyncio's default is 60 s.
TLS_HANDSHAKE_TIMEOUT_S = 10.0


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.data_dir = config.log_dirs[0]
        _check_data_dir(self.data_dir)
        self.mode = cluster_mode(config)
        self.mode.prepare_log_dirs()
        open_file_limit = raise_open_file_limit()
        self.log_manager = LogManager(config.log_dirs, config.topic_defaults(),
                                      retention_check_interval_ms=config["log.retention.check.interval.ms"],
                                      high_watermark_of=self._high_watermark_of,
                                      recovery_threads_per_data_dir=config["num.recovery.threads.per.data.dir"],
                                      writeback_interval_bytes=self._writeback_interval_bytes())
        check_open_file_room(open_file_limit, self.log_manager.all_logs())
        self.log_cleaner = LogCleaner(self.log_manager, config["log.cleaner.backoff.ms"],
                                      enabled=config["log.cleaner.enable"])
        self.replica_manager = ReplicaManager(config.broker_id, self.log_manager,
                                              config.topic_defaults(),
                                              config["producer.id.expiration.ms"],
                                              topic_overrides=self._topic_overrides,
                                              replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
                                              fetch_session_cache_slots=config[
                                                  "max.incremental.fetch.session.cache.slots"])
        self.replica_manager.replica_selector = replica_selector(config["replica.selector.class"])
        # A replica moving between log dirs swaps logs only between cleaner passes.
        self.replica_manager.mover.busy = lambda item: self.log_cleaner.cleaning is item
        self.replica_manager.log_dir_failure_listeners.append(self._on_log_dir_failure)
        self.dynamic_config = DynamicBrokerConfig(config)
        self._wire_dynamic_config()
        self.fetchers: FetcherManager | None = None
        self.stats = BrokerStats()
        self._open_backend()
        broker_security = self._prepare_security()
        self.group_coordinator = self._make_group_coordinator()
        # Topic names <-> ids (KIP-516): Metadata v10+, consumer and share groups.
        self.topic_ids = self.group_coordinator.manager.topic_ids
        self.share_groups = ShareGroupService(config, self.controller, self.replica_manager,
                                              self.group_coordinator, self.topic_ids,
                                              self.mode.replicated)
        self.replica_manager.deleted_topic_listeners.append(self.stats.topics.remove_topics)
        self.started_at = time.time()
        # /metrics and the console: group lag, and the counters above sampled
        # for the console's charts.
        self.consumer_lag = ConsumerLag(self.replica_manager, self.group_coordinator, RemoteEndOffsets(
            config.broker_id, self.replica_manager.metadata_cache))
        self.history = ConsoleHistory(self.stats)
        self.http = HttpListeners(self)
        self.replica_manager.txn_markers.completion_listeners.append(
            self.group_coordinator.on_txn_marker)
        self.txn_coordinator = self._make_txn_coordinator()
        self.txn_verifier = TransactionVerifier(
            config.broker_id, self.replica_manager.metadata_cache,
            lambda transactional_id: (TRANSACTION_STATE_TOPIC,
                                      self.txn_coordinator.manager.partition_for(transactional_id)),
            self.txn_coordinator.verify_partitions,
            config["transaction.partition.verification.enable"])
        self._warn_if_brokers_are_refused(broker_security)
        self.replica_manager.leadership_listeners.append(self.txn_coordinator.on_leadership_change)
        self.schema_registry = BrokerRegistry(config, self.controller, self.replica_manager,
                                              lambda: self.log_syncer, self.scram_credentials,
                                              self._sasl_settings, lambda: self.authorizer, self._auth_failures,
                                              self.security_store, self.mode.replicated)
        self.schemas = self.schema_registry.registry  # what the console reads (ConsoleSource)
        # A node's processes share one catalog, under the node's log dir.
        self.tables = TableService(CatalogSettings.from_broker(
            config, Path(os.environ.get(NODE_DIR_ENV) or config.log_dirs[0])), self.replica_manager,
            self.schema_registry.registry, self.schema_registry.store.sync)
        # Advertise only what has a handler: a client that sees an API in
        # ApiVersions will call it.
        self.api_versions = {key: versions for key, versions in protocol.supported_versions().items()
                             if key in HANDLERS}
        if "consumer" not in config["group.coordinator.rebalance.protocols"]:
            for key in (protocol.ApiKey.CONSUMER_GROUP_HEARTBEAT, protocol.ApiKey.CONSUMER_GROUP_DESCRIBE):
                self.api_versions.pop(key, None)
        self._servers: list[asyncio.Server] = []
        self._connections: set[KafkaConnection] = set()
        self._tasks: list[asyncio.Task] = []
        self._connection_ids = itertools.count()
        self._stopped = asyncio.Event()
        self.log_syncer: GroupCommitSyncer | None = None  # flush.messages=1 group commit, made in start()

    def _open_backend(self) -> None:
        """What the cluster mode decides, built once (server/backend.py);
        in a cluster, leaders propose their ISR changes to the controller."""
        backend = self.mode.build(self.broker_info(), self.replica_manager)
        self.controller = backend.controller
        self.scram_credentials = backend.scram_credentials
        self.producer_ids = backend.producer_ids
        self.security_store = backend.security_store
        self.alter_partitions: AlterPartitionManager | None = None
        if self.mode.replicated:
            self.alter_partitions = AlterPartitionManager(self.controller.send_alter_partition)
            self.replica_manager.isr_change_handler = self.alter_partitions.submit

    def _make_group_coordinator(self) -> GroupCoordinator:
        config = self.config
        coordinator = GroupCoordinator(
            GroupConfig.from_broker_config(config),
            GroupMetadataManager(self.controller, self.replica_manager,
                                 config["offsets.topic.num.partitions"],
                                 config["offsets.topic.replication.factor"]))
        self.replica_manager.leadership_listeners.append(coordinator.on_leadership_change)
        self.replica_manager.deleted_topic_listeners.append(coordinator.on_topics_deleted)
        return coordinator

    def _prepare_security(self) -> ClientSecurity | None:
        """TLS contexts, SASL settings, the authorizer and quotas, built
        before anything starts so that a bad key store or JAAS config fails
        the start with a ConfigError; the inter-broker login, if this
        broker has peers."""
        config = self.config
        self._auth_failures = AuthFailures(config["connection.failed.authentication.delay.ms"])
        self._ssl_contexts = {listener.name: server_ssl_context(config, listener)
                              for listener in config.listeners() if listener.uses_ssl}
        self._sasl_settings = {listener.name: sasl_settings(config, listener, self.scram_credentials)
                               for listener in config.listeners() if listener.uses_sasl}
        self.authorizer = (Authorizer(config["super.users"], config["allow.everyone.if.no.acl.found"])
                           if config["authorizer.class.name"] else None)
        self.quotas = ClientQuotas()
        if not self.mode.peers:
            # A single node never connects to itself: no inter-broker login.
            return None
        broker_security = inter_broker_security(config)
        set_inter_broker_security(broker_security)
        return broker_security

    # -- start / stop -------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.log_syncer, durability = open_syncer(
                loop, journal_dir=self.config.log_dirs[0],
                journal_bytes=self.config["log.flush.journal.bytes"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        log.info("%s", durability)
        self.group_coordinator.manager.syncer = self.log_syncer
        self.txn_coordinator.manager.syncer = self.log_syncer
        self.share_groups.store.syncer = self.log_syncer
        self.replica_manager.txn_markers.syncer = self.log_syncer
        if self.log_syncer is not None:
            self.log_manager.before_delete.append(self.log_syncer.forget)
            if self.log_syncer.journal is not None and self.config.topic_defaults()["flush.messages"] == 1:
                await self.log_syncer.journal.prepare()
        self.group_coordinator.start()
        self.txn_coordinator.start()
        self._start_fetchers()
        await self.controller.start()
        self.security_store.on_broker_configs = self.dynamic_config.replace
        await self.security_store.start(self._on_security_change)
        self._delete_stray_logs()
        await self._listen(loop)
        for settings in self._sasl_settings.values():
            self._tasks.extend(loop.create_task(job()) for job in settings.background)
        await self.http.start(self.config["http.listeners"], strict=operator_set(self.config, "http.listeners"))
        if self.config["http.listeners"]:
            self._sample()  # the zero the first second's rates start from
            self._tasks.append(loop.create_task(self._every(SAMPLE_INTERVAL_S, self._sample)))
        await self.controller.register()
        await self.schema_registry.start()
        self.tables.start()
        self._start_idle_sweep(loop)
        self._tasks.append(loop.create_task(self._every(
            self.config["log.retention.check.interval.ms"] / 1000, self.log_manager.cleanup_logs)))
        self._tasks.append(loop.create_task(self._every(
            PRODUCER_SNAPSHOT_INTERVAL_S, self.replica_manager.snapshot_producer_states)))
        self._tasks.append(loop.create_task(self._every(
            self._flush_check_interval_s(), self.log_manager.write_back_dirty_logs)))
        self._tasks.append(loop.create_task(self.log_cleaner.run()))
        self._tasks.append(loop.create_task(self._every(
            self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000,
            self.replica_manager.checkpoint_high_watermarks)))
        # Kafka checks the ISR every replica.lag.time.max.ms / 2.
        self._tasks.append(loop.create_task(self._every(
            self.config["replica.lag.time.max.ms"] / 2000, self.replica_manager.maybe_shrink_isr)))
        log.info("broker %d started (%s, cluster id %s, %d partitions)", self.config.broker_id,
                 self.mode.name, self.controller.cluster_id, len(self.replica_manager.partitions))

    async def _listen(self, loop: asyncio.AbstractEventLoop) -> None:
        for listener in self.config.listeners():
            name = listener.name
            server = await loop.create_server(
                lambda name=name: self._new_connection(name), listener.host or None, listener.port,
                reuse_address=True, backlog=1024, ssl=self._ssl_contexts.get(name),
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if listener.uses_ssl else None)
            check_listening(server)
            apply_buffer_sizes(server.sockets, self.config["socket.send.buffer.bytes"],
                               self.config["socket.receive.buffer.bytes"])
            self._servers.append(server)
            log.info("listening on %s://%s:%d (%s)", name, listener.host, listener.port,
                     listener.security_protocol)

    def _make_txn_coordinator(self) -> TransactionCoordinator:
        config = self.config
        # A node without ZooKeeper keeps one replica of internal topics.
        replication_factor = (config["transaction.state.log.replication.factor"]
                              if self.mode.replicated else 1)
        manager = TransactionStateManager(self.controller, self.replica_manager, TxnConfig(
            config["transaction.state.log.num.partitions"], replication_factor,
            config["transaction.state.log.min.isr"], config["transaction.state.log.segment.bytes"],
            config["transaction.max.timeout.ms"], config["transactional.id.expiration.ms"],
            config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            config["transaction.remove.expired.transaction.cleanup.interval.ms"]))
        markers = MarkerSender(config.broker_id, self.replica_manager.metadata_cache,
                               self.replica_manager.txn_markers)
        return TransactionCoordinator(manager, self.producer_ids.next_id, markers)

    def _start_fetchers(self) -> None:
        if not self.mode.replicated:
            return
        config = self.config
        self.fetchers = FetcherManager(FetcherConfig(
            config.broker_id, config["replica.fetch.wait.max.ms"], config["replica.fetch.min.bytes"],
            config["replica.fetch.response.max.bytes"], config["replica.fetch.max.bytes"],
            config["replica.fetch.backoff.ms"], config["replica.socket.timeout.ms"]),
            syncer=lambda: self.log_syncer, quota=self.replica_manager.follower_quota)
        self.replica_manager.fetchers = self.fetchers

    def _delete_stray_logs(self) -> None:
        """In a cluster, logs of topics that no longer exist (deleted while
        this broker was down) go, as the controller would have had them;
        so do logs of a topic deleted and created again under the same
        name meanwhile: their ``partition.metadata`` names another id."""
        if not self.mode.replicated:
            return
        for log_ in list(self.log_manager.all_logs()):
            topic = self.controller.topic(log_.topic)
            if topic is None:
                reason = "the topic no longer exists"
            elif log_.topic_id not in (None, topic.topic_id) and topic.topic_id != NO_TOPIC_ID:
                reason = (f"it belongs to topic id {topic_id_to_string(log_.topic_id)}, deleted; "
                          f"{log_.topic} is {topic_id_to_string(topic.topic_id)} now")
            else:
                continue
            log.info("deleting the log of %s-%d: %s", log_.topic, log_.partition, reason)
            self.log_manager.delete_log(log_.topic, log_.partition)

    def broker_info(self) -> BrokerInfo:
        """This broker as other brokers and clients reach it."""
        host, port = self.config.advertised_address()
        return BrokerInfo(self.config.broker_id, host, port, self.config["broker.rack"],
                          listener=self.config.inter_broker_listener().name,
                          endpoints=tuple(self.config.advertised_endpoints()),
                          security_protocols=tuple((item.name, item.security_protocol)
                                                   for item in self.config.listeners()))

    def _wire_dynamic_config(self) -> None:
        """The throttles read the topics' throttled-replicas lists live and
        take their rates, and the partitions their topic defaults, from the
        dynamic config on every change."""
        manager = self.replica_manager

        def topic_configs(topic: str) -> dict[str, str] | None:
            info = self.controller.topic(topic)
            return info.configs if info is not None else None

        def apply() -> None:
            manager.leader_quota.update_bound(self.dynamic_config[LEADER_RATE])
            manager.follower_quota.update_bound(self.dynamic_config[FOLLOWER_RATE])
            manager.update_topic_defaults(self.dynamic_config.topic_defaults())

        manager.leader_quota.topic_configs = manager.follower_quota.topic_configs = topic_configs
        self.dynamic_config.listeners.append(apply)
        apply()

    def _topic_overrides(self, topic: str) -> dict:
        info = self.controller.topic(topic)
        return parse_topic_configs(info.configs) if info is not None else {}

    def bound_ports(self) -> list[int]:
        return [s.sockets[0].getsockname()[1] for s in self._servers]

    async def serve_until_stopped(self) -> None:
        await self._stopped.wait()

    def request_stop(self) -> None:
        self._stopped.set()

    async def shutdown(self) -> None:
        await self.security_store.shutdown()
        self.replica_manager.leaving = True  # before the controlled shutdown moves its leaderships
        await self.controller.shutdown()
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        for server in self._servers:
            server.close()
        self.http.close()
        await self.schema_registry.shutdown()
        await self.tables.close()
        self.consumer_lag.close()
        for connection in list(self._connections):
            connection.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.log_syncer is not None:
            await self.log_syncer.close()
        self.share_groups.shutdown()
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.txn_verifier.close()
        self.replica_manager.shutdown()
        self.log_manager.shutdown()
        log.info("broker %d stopped cleanly", self.config.broker_id)

    def _sample(self) -> None:
        self.history.sample()
        self.consumer_lag.sample()

    def _writeback_interval_bytes(self) -> int:
        """log.writeback.interval.bytes, -1 resolved for this process's memory cgroup."""
        setting = self.config["log.writeback.interval.bytes"]
        limit = writeback.memory_limit_bytes() if setting == writeback.AUTO else None
        interval = writeback.interval_for(setting, limit)
        if limit is not None and interval:
            log.info("write-behind every %d bytes: memory cgroup limit %d MiB", interval, limit >> 20)
        return interval

    def _flush_check_interval_s(self) -> float:
        """flush.ms is checked, rolled segments fsynced and the recovery
        point checkpointed on one timer: the flush scheduler's interval, or
        Kafka's 60 s checkpoint interval when that comes first. Each pass
        fsyncs on the loop (~8 ms measured, the data written back first by
        a worker: LogManager.write_back_dirty_logs), so once a second was
        too often."""
        return min(self.config["log.flush.scheduler.interval.ms"],
                   self.config["log.flush.offset.checkpoint.interval.ms"]) / 1000

    def _on_log_dir_failure(self, directory: Path) -> None:
        """A log dir went offline: the controller moves the leadership of
        its partitions (in a cluster; ZooKeeper's log dir event)."""
        self._tasks.append(asyncio.get_running_loop().create_task(
            self.controller.propagate_log_dir_event()))

    def _high_watermark_of(self, topic: str, index: int) -> int | None:
        partition = self.replica_manager.get(topic, index)
        return partition.high_watermark if partition is not None else None

    # -- requests -----------------------------------------------------------
    def _new_connection(self, listener: str) -> KafkaConnection:
        settings: SaslSettings | None = self._sasl_settings.get(listener)
        connection = KafkaConnection(self.dispatch, listener,
                                     self.config["socket.request.max.bytes"],
                                     next(self._connection_ids), self._connections.discard,
                                     self._request_observer(),
                                     sasl=(settings, self._auth_failures) if settings else None,
                                     max_in_flight=self.config["queued.max.requests"],
                                     socket_stats=self.stats.socket_server)
        self._connections.add(connection)
        created = self.stats.connections_created
        created[listener] = created.get(listener, 0) + 1
        return connection

    def connection_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for connection in self._connections:
            counts[connection.listener] = counts.get(connection.listener, 0) + 1
        return counts

    def _request_observer(self):
        """Request metrics when /metrics is served, the debug line when
        asked for; neither costs anything otherwise."""
        if self.config["http.listeners"] or request_log.isEnabledFor(logging.DEBUG):
            return self._observe_request
        return None

    def _observe_request(self, context: ConnectionContext, request, size: int, elapsed_s: float,
                         body) -> None:
        header = request.header
        name = self.stats.requests.record(header.api_key, header.api_version, request.body,
                                          elapsed_s * 1000, body)
        if request_log.isEnabledFor(logging.DEBUG):
            request_log.debug("%s v%d from client %r at %s (connection %d): %d bytes, %.3f ms", name,
                              header.api_version, header.client_id, context.peer,
                              context.connection_id, size, elapsed_s * 1000)

    def _warn_if_brokers_are_refused(self, security: ClientSecurity | None) -> None:
        """Other brokers (and a node's processes) connect as the principal
        of the inter-broker listener: the SASL user, or User:ANONYMOUS over
        PLAINTEXT. Unless it is a super user, the authorizer refuses their
        LeaderAndIsr, UpdateMetadata and follower fetches. (Over SSL the
        principal is the certificate's subject, not known here.)"""
        if self.authorizer is None or not self.mode.peers:
            return
        if security is None:
            principal = "User:ANONYMOUS"
        elif security.uses_sasl and security.username:
            principal = f"User:{security.username}"
        else:
            return
        if principal not in self.authorizer.super_users:
            log.warning("authorizer.class.name is set but super.users does not name %s, the "
                        "principal other brokers connect as: their requests will get "
                        "CLUSTER_AUTHORIZATION_FAILED", principal)

    def _on_security_change(self, acls: set[AclBinding], quotas: QuotaConfigs) -> None:
        """The stored ACLs and quotas, at start and after every change made
        on any broker."""
        if self.authorizer is not None:
            self.authorizer.replace(acls)
        self.quotas.replace(quotas)

    async def dispatch(self, context, request):
        handler = HANDLERS.get(request.api_key)
        if handler is None:
            raise CloseConnection(f"API key {request.api_key} is not served")
        if (self.authorizer is not None and request.api_key in CLUSTER_ACTION_APIS
                and not self.authorizer.authorize(context.principal, client_host(context),
                                                  AclOperation.CLUSTER_ACTION,
                                                  ResourceType.CLUSTER, CLUSTER_NAME)):
            log.warning("%s from %s (%s) refused: no CLUSTER_ACTION on the cluster",
                        protocol.ApiKey(request.api_key).name, context.peer, context.principal)
            return _cluster_action_denied(request)
        if self.quotas.limits_requests and request_quota.applies(self.quotas, request.api_key,
                                                                 context, request):
            return await request_quota.run_timed(self.quotas, context, request,
                                                 handler(self, context, request))
        return await handler(self, context, request)

    def _start_idle_sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        max_idle_ms = self.config["connections.max.idle.ms"]
        interval_s = idle.sweep_interval_s(max_idle_ms)
        if interval_s is not None:
            self._tasks.append(loop.create_task(self._every(
                interval_s, lambda: idle.close_idle(list(self._connections), max_idle_ms))))

    async def _every(self, interval_s: float, action) -> None:
        """``action()`` every ``interval_s``, awaited when it is a coroutine."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                result = action()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("background task %s failed", getattr(action, "__name__", action))


# Broker-to-broker requests: the sender needs CLUSTER_ACTION on the cluster
# (Kafka's KafkaApis), so with an authorizer super.users must name the
# brokers' principal.
CLUSTER_ACTION_APIS = frozenset({
    protocol.ApiKey.LEADER_AND_ISR, protocol.ApiKey.STOP_REPLICA, protocol.ApiKey.UPDATE_METADATA,
    protocol.ApiKey.CONTROLLED_SHUTDOWN, protocol.ApiKey.ALTER_PARTITION,
    protocol.ApiKey.WRITE_TXN_MARKERS,
})


def _cluster_action_denied(request) -> dict:
    """The refusal of a broker-to-broker request: the top-level error of
    each, per partition for WriteTxnMarkers (which has none)."""
    code = protocol.ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if request.api_key == protocol.ApiKey.WRITE_TXN_MARKERS:
        return {"markers": [
            {"producer_id": marker.producer_id, "topics": [
                {"name": topic.name, "partitions": [
                    {"partition_index": index, "error_code": code}
                    for index in topic.partition_indexes]}
                for topic in marker.topics]}
            for marker in request.body.markers]}
    return {"error_code": code}


def _check_data_dir(path: Path) -> None:
    """Fail at start with a sentence, not a traceback, if the data dir
    cannot be used."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"log.dirs: cannot create {path}: {exc.strerror}") from None
    if not path.is_dir():
        raise ConfigError(f"log.dirs: {path} is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"log.dirs: {path} is not writable by this user")

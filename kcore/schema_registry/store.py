"""The ``_schemas`` topic behind every broker's registry: created on the
first write, appended to by its primary, replayed by everyone.

One partition, compacted, ``schema.registry.topic.replication.factor``
replicas (as many as there are live brokers when fewer). The broker that
leads the partition is the registry's primary, as Confluent elects one:
it alone appends, with acks=all, and it reads its own log back to update
its state (``catch_up_local``), so the state always equals the log.

Every other broker follows the leader as a consumer does: one long-poll
Fetch at a time over the inter-broker listener (``run``), applying what
the leader's high watermark covers. ``sync`` waits until this broker has
applied everything the leader had committed when it was called; the REST
layer calls it before answering "not found" and after a forwarded write,
so a schema registered through any broker is found through any other.

Leadership moves are handled so the state never holds records the log
lost: a broker whose state came from its own log (records past the high
watermark included) rebuilds it from the new leader when it stops
leading, into a fresh state that replaces the old one once it has caught
up; a broker that becomes the leader replays its own log.

Not thread-safe: the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.fetch import FetchPosition, fetch, list_offsets, records_from
from kcore.client.metadata import TopicPartition
from kcore.clock import SYSTEM_CLOCK, Clock, wall_ms
from kcore.controller.base import Controller
from kcore.coordinator.internal_log import StoreError, append_replicated
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata import TopicError
from kcore.protocol import records as record_codec
from kcore.protocol.constants import LATEST_TIMESTAMP
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError
from kcore.replication.replica_manager import ReplicaManager
from kcore.schema_registry import errors
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.state import RegistryState

log = logging.getLogger(__name__)

SCHEMAS_TOPIC = "_schemas"
SCHEMAS_PARTITION = TopicPartition(SCHEMAS_TOPIC, 0)
TOPIC_CONFIGS = {"cleanup.policy": "compact"}
# One read or fetch of the topic; schemas are a few KiB each.
READ_CHUNK_BYTES = 1 << 20
# Confluent waits kafkastore.timeout.ms (500 ms) for a write; an acks=all
# append on a loaded cluster can take longer, and a registration is rare.
APPEND_TIMEOUT_S = 10.0
# A follower's long poll, and its pause after a failed fetch.
FETCH_WAIT_MS = 500
RETRY_BACKOFF_S = 0.2
# How long a new topic may take to get a leader before a write gives up.
LEADER_WAIT_S = 10.0
# How long a broker that has not replayed the topic yet keeps a request waiting.
READY_TIMEOUT_S = 30.0


class SchemaStore:
    def __init__(self, broker_id: int, controller: Controller, replica_manager: ReplicaManager,
                 replication_factor: int, syncer: Callable[[], GroupCommitSyncer | None],
                 clock: Clock = SYSTEM_CLOCK):
        self.broker_id = broker_id
        self.controller = controller
        self.replica_manager = replica_manager
        self.replication_factor = replication_factor
        self._syncer = syncer
        self.clock = clock
        self.state = RegistryState()
        # The state came from this broker's own log (past the high watermark perhaps).
        self._state_is_local = False
        self._loading: RegistryState | None = None  # a rebuild from the leader, swapped in when caught up
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()
        self._pool = BrokerPool(f"kcore-schema-registry-{broker_id}",
                                replica_manager.metadata_cache.address_of, FETCH_WAIT_MS / 1000 + 5)
        self._task: asyncio.Task | None = None

    # -- life ---------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._pool.close()

    async def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until this broker has replayed the topic once (at once if none exists)."""
        if self._ready.is_set():
            return
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            raise RegistryError(errors.OPERATION_TIMEOUT, f"the registry has not read {SCHEMAS_TOPIC} "
                                                          f"yet") from None

    # -- who writes ---------------------------------------------------------
    def leader_id(self) -> int | None:
        leader = self.replica_manager.metadata_cache.leader_of(SCHEMAS_TOPIC, 0)
        return leader.broker_id if leader is not None else None

    def _local_leader(self) -> Partition | None:
        partition = self.replica_manager.get(SCHEMAS_TOPIC, 0)
        return partition if partition is not None and partition.is_leader else None

    def is_primary(self) -> bool:
        return self._local_leader() is not None

    async def ensure_topic(self) -> None:
        """Create the topic if it does not exist, and wait until it has a leader."""
        if self.controller.topic(SCHEMAS_TOPIC) is None:
            live = len(self.replica_manager.metadata_cache.brokers) or 1
            try:
                await self.controller.create_topic(SCHEMAS_TOPIC, 1, max(1, min(self.replication_factor, live)),
                                                   dict(TOPIC_CONFIGS))
                log.info("created %s", SCHEMAS_TOPIC)
            except TopicError as exc:
                if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise RegistryError(errors.STORE_ERROR, f"cannot create {SCHEMAS_TOPIC}: "
                                                            f"{exc.message}") from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEADER_WAIT_S
        while self.leader_id() is None or (self.leader_id() == self.broker_id and not self.is_primary()):
            if loop.time() > deadline:
                raise RegistryError(errors.UNKNOWN_LEADER, f"{SCHEMAS_TOPIC} has no leader")
            await asyncio.sleep(0.05)
        self._wake.set()

    # -- the primary's side -------------------------------------------------
    async def append(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Append one batch with acks=all (primary only), then read it back."""
        await self.ensure_topic()
        partition = self._local_leader()
        if partition is None:
            raise RegistryError(errors.UNKNOWN_LEADER, "this broker is no longer the registry's primary")
        self.catch_up_local()
        timestamp = wall_ms(self.clock)
        batch = record_codec.build_batch([record_codec.Record(key=key, value=value, timestamp=timestamp)
                                          for key, value in entries])
        try:
            committed = append_replicated(partition, batch, self._syncer(), APPEND_TIMEOUT_S)
        except StoreError as exc:
            raise RegistryError(errors.STORE_ERROR, f"cannot write to {SCHEMAS_TOPIC}: "
                                                    f"{ErrorCode(exc.error_code).name}") from None
        self.catch_up_local()
        if committed is not None:
            try:
                await committed
            except StoreError as exc:
                code = (errors.OPERATION_TIMEOUT if exc.error_code == ErrorCode.REQUEST_TIMED_OUT
                        else errors.STORE_ERROR)
                raise RegistryError(code, f"the write to {SCHEMAS_TOPIC} was not replicated: "
                                          f"{ErrorCode(exc.error_code).name}") from None

    def catch_up_local(self) -> None:
        """On the primary: apply what its log holds past the state."""
        partition = self._local_leader()
        if partition is None or self._loading is not None:
            return
        if not self._state_is_local:
            self._state_is_local = True
        _replay_log(partition, self.state)
        self._ready.set()

    def on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        """ReplicaManager listener for ``_schemas``-0."""
        if partition.topic != SCHEMAS_TOPIC or partition.index != 0:
            return
        if is_leader:
            if self._loading is not None or self.state.offset > partition.log_end_offset:
                self.state = RegistryState()  # a rebuild was under way: the own log is the truth now
            self._loading = None
            self.catch_up_local()
            log.info("%s: this broker is the schema registry's primary (%d records applied)",
                     SCHEMAS_TOPIC, self.state.offset)
        elif self._state_is_local:
            self._loading = RegistryState()
            self._state_is_local = False
        self._wake.set()

    # -- everyone else ------------------------------------------------------
    def refresh(self) -> None:
        """Fetch from the leader now rather than at the end of the long poll."""
        self._wake.set()

    async def sync(self, timeout_s: float = 5.0) -> None:
        """Until everything the leader has committed now is applied here."""
        if self.is_primary():
            self.catch_up_local()
            return
        leader = self.leader_id()
        if leader is None:
            self._wake.set()
            return
        try:
            connection = await self._pool.connection(leader)
            listed = await list_offsets(connection, {SCHEMAS_PARTITION: LATEST_TIMESTAMP})
        except (LookupError, BrokerConnectionError, KafkaError, OSError) as exc:
            self._pool.drop(leader)
            raise RegistryError(errors.STORE_ERROR, f"cannot reach the registry's primary: {exc}") from None
        target = listed[SCHEMAS_PARTITION].offset
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        self._wake.set()
        while self._loading is not None or self.state.offset < target:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise RegistryError(errors.OPERATION_TIMEOUT, f"{SCHEMAS_TOPIC} was not read up to offset "
                                                              f"{target} in time")
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), remaining)
            except TimeoutError:
                pass

    async def _run(self) -> None:
        while True:
            try:
                waited = await self._step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("following %s failed", SCHEMAS_TOPIC)
                waited = False
            if not waited:
                await self._sleep(RETRY_BACKOFF_S)

    async def _step(self) -> bool:
        """One round of following; True when it waited on the leader already."""
        leader = self.leader_id()
        if self.is_primary():
            self.catch_up_local()
            await self._sleep(1.0)
            return True
        if leader is None or leader == self.broker_id:
            if self.controller.topic(SCHEMAS_TOPIC) is None and self.replica_manager.metadata_cache.brokers:
                self._ready.set()  # no registry written yet: empty, and ready
            await self._sleep(1.0)
            return True
        target = self._loading if self._loading is not None else self.state
        try:
            connection = await self._pool.connection(leader)
            fetched = (await fetch(connection, {SCHEMAS_PARTITION: FetchPosition(target.offset, READ_CHUNK_BYTES)},
                                   max_wait_ms=FETCH_WAIT_MS))[SCHEMAS_PARTITION]
        except (LookupError, BrokerConnectionError, KafkaError, OSError, KeyError) as exc:
            log.debug("fetching %s from broker %d: %s", SCHEMAS_TOPIC, leader, exc)
            self._pool.drop(leader)
            return False
        if fetched.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            log.warning("%s: offset %d is gone from the leader; reading it again from its start",
                        SCHEMAS_TOPIC, target.offset)
            self._loading = RegistryState()
            return False
        if fetched.error_code != ErrorCode.NONE:
            return False
        if self._loading is not target and target is not self.state:
            return True  # the leadership moved while the fetch was out
        result = records_from(fetched, target.offset)
        for record in result.records:
            target.apply(record.key, record.value, record.offset if record.offset is not None else target.offset)
        target.offset = max(target.offset, result.next_offset)
        if target.offset >= fetched.high_watermark:
            if target is self._loading:
                self.state, self._loading = target, None
                log.info("%s: rebuilt from broker %d (%d records)", SCHEMAS_TOPIC, leader, target.offset)
            self._ready.set()
        self._progress.set()
        return True

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass


def _replay_log(partition: Partition, state: RegistryState) -> None:
    """Apply the records of ``partition``'s log from ``state.offset`` to its end."""
    while state.offset < partition.log_end_offset:
        start = state.offset
        try:
            slices = partition.read_for_follower(max(start, partition.log_start_offset), READ_CHUNK_BYTES)
        except PartitionError as exc:
            log.warning("%s: cannot read from offset %d: %s", SCHEMAS_TOPIC, start, exc.message)
            return
        for file_slice in slices:
            data = os.pread(file_slice.fd, file_slice.size, file_slice.position)
            for batch in record_codec.iter_batches(data):
                if batch.is_control or batch.last_offset < state.offset:
                    state.offset = max(state.offset, batch.next_offset)
                    continue
                for record in batch.records():
                    if record.offset is not None and record.offset >= state.offset:
                        state.apply(record.key, record.value, record.offset)
                state.offset = max(state.offset, batch.next_offset)
        if state.offset == start:
            return

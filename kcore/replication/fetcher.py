"""Followers copy their leaders: one fetcher task per leader broker.

A follower fetches like a consumer (Fetch v12, or v11 from a leader that
lacks it), with ``replica_id`` set to its broker id, from its log end
offset, up to the leader's log end offset; the leader learns the
follower's progress from the fetch offset and answers with its high
watermark and log start offset.
Batches are appended as they are (offsets, leader epochs), the producer
state follows them, so a follower can lead next without losing its
deduplication window.

A partition's log is truncated to the leader's epoch boundary after a
leader change (KIP-101/279): the leader names an epoch and its end
offset, and our log is cut at min(that end offset, our end of that
epoch, our log end offset). When the leader never had our epoch it
names an older one, our log is cut at our end of the largest epoch below
it, and the check repeats with our new latest epoch. With Fetch v12 the
fetch itself carries our latest epoch (``last_fetched_epoch``) and the
leader answers a ``diverging_epoch`` when our log diverges from its own
(Kafka's truncation on fetch), so a new leadership costs no extra round
trip; the answer's high watermark is not taken until the truncation is
done; an append of the leader's batches that fails is checked the same
way by the next fetch. From a leader without v12, and when our log end is
past the leader's (OFFSET_OUT_OF_RANGE, where the leader may not know our
latest epoch at all), an OffsetForLeaderEpoch v3 exchange with our latest
epoch gives the same (epoch, end offset) before fetching. Without any
epoch to ask for, the log is cut at the high watermark, Kafka's fallback.

Each fetcher holds a fetch session with its leader (KIP-227,
client/fetch_session.py): after a first full request, a fetch names only
the partitions whose log end moved (or that joined or left), and the
leader answers with only those that have news, so a follower of 10,000
mostly idle partitions neither sends nor makes its leader read them all
on every fetch.

With flush.messages=1 a follower fsyncs what it appended (group commit)
before its next fetch reports the new offset: the leader's high watermark,
hence every acks=all acknowledgement, only covers data on the followers'
disks too.

Replication throttle (replication_quota.py): while this broker's
follower quota is exceeded, the throttled partitions out of the ISR are
left out of the fetch (Kafka's ``shouldFollowerThrottle``), and the bytes
fetched for throttled partitions are recorded against it.

Errors: a leader that is down or not yet leader is retried after
``replica.fetch.backoff.ms``; a FENCED_LEADER_EPOCH means this broker has
not seen the new LeaderAndIsr yet, which will move the partition. A local
write that fails (a full disk) is retried the same way and never taken
for divergence: the log stays, and the replica leaves the ISR by lagging.

Not thread-safe: tasks on the broker's event loop. A partition belongs to at
most one fetcher; ``remove_partitions`` takes it back at once and any answer
still in flight for it is dropped (its leader epoch no longer matches).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kcore.client.connection import BrokerConnection
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.fetch_session import FetchSessionHandler, FetchState
from kcore.client.inter_broker import inter_broker_security
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata import BrokerInfo, TopicPartition
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import READ_UNCOMMITTED
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError
from kcore.replication.replication_quota import ReplicationQuota

log = logging.getLogger(__name__)

FETCH_VERSION = 12
# The first Fetch version with last_fetched_epoch and diverging_epoch.
TRUNCATION_ON_FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
# Rounds of OffsetForLeaderEpoch before falling back to the high watermark:
# each round moves to an older epoch, and more than a few never happen.
MAX_TRUNCATION_ROUNDS = 8
# A fetcher whose every partition is held back by the throttle looks again
# this often: a tenth of a 1 s quota sample, fine enough for the rate.
THROTTLED_PAUSE_S = 0.1


@dataclass(frozen=True)
class FetcherConfig:
    """Kafka's replica.fetch.* settings."""
    broker_id: int
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 10 * 1024 * 1024
    partition_max_bytes: int = 1024 * 1024
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000


@dataclass
class _FetchState:
    partition: Partition
    leader_epoch: int
    truncating: bool = True
    # With Fetch v12 the fetch itself checks for divergence (module doc);
    # False when our log end is past the leader's: OffsetForLeaderEpoch.
    on_fetch: bool = True
    delayed_until: float = 0.0
    rounds: int = 0  # truncations of this divergence (exchanges or diverging answers)


class FetcherManager:
    """Implements ReplicaManager's ``Fetchers``: one ``LeaderFetcher`` per
    leader broker id."""

    def __init__(self, config: FetcherConfig,
                 syncer: Callable[[], GroupCommitSyncer | None] = lambda: None,
                 quota: ReplicationQuota | None = None):
        self.config = config
        self.syncer = syncer
        self.quota = quota
        self.fetchers: dict[int, LeaderFetcher] = {}

    def add_partitions(self, leader: BrokerInfo, partitions: Sequence[Partition]) -> None:
        fetcher = self.fetchers.get(leader.broker_id)
        if fetcher is not None and (fetcher.leader.host, fetcher.leader.port) != (leader.host, leader.port):
            fetcher.stop()
            fetcher = None
        if fetcher is None:
            fetcher = self.fetchers[leader.broker_id] = LeaderFetcher(leader, self.config, self.syncer,
                                                                        self.quota)
        fetcher.add(partitions)

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        keys = set(partitions)
        if not keys:
            return
        for leader_id, fetcher in list(self.fetchers.items()):
            fetcher.remove(keys)
            if fetcher.idle:
                fetcher.stop()
                del self.fetchers[leader_id]

    def lag(self) -> dict[TopicPartition, int]:
        """Per followed partition, how far behind the leader's last known
        high watermark its log end is (0 when caught up)."""
        return {key: state.partition.high_watermark - state.partition.log_end_offset
                for fetcher in self.fetchers.values() for key, state in fetcher.states.items()}

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            fetcher.stop()
        await asyncio.gather(*(f.wait_stopped() for f in fetchers), return_exceptions=True)


class LeaderFetcher:
    """Fetches every partition this broker follows from one leader."""

    def __init__(self, leader: BrokerInfo, config: FetcherConfig,
                 syncer: Callable[[], GroupCommitSyncer | None],
                 quota: ReplicationQuota | None = None):
        self.leader = leader
        self.config = config
        self._syncer = syncer
        self.quota = quota
        self.states: dict[TopicPartition, _FetchState] = {}
        self._wakeup = asyncio.Event()
        self._connection: BrokerConnection | None = None
        self.session = FetchSessionHandler()
        self._task = asyncio.get_running_loop().create_task(self._run())

    @property
    def idle(self) -> bool:
        return not self.states

    def add(self, partitions: Sequence[Partition]) -> None:
        for partition in partitions:
            self.states[partition.topic_partition] = _FetchState(partition, partition.leader_epoch)
        self._wakeup.set()

    def remove(self, keys: set[TopicPartition]) -> None:
        for key in keys & self.states.keys():
            del self.states[key]

    def stop(self) -> None:
        self._task.cancel()
        if self._connection is not None:
            self._connection.close()

    async def wait_stopped(self) -> None:
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    # -- the loop ----------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = self.config.backoff_ms / 1000
        while True:
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except (BrokerConnectionError, KafkaError, OSError) as exc:
                log.info("fetching from broker %d at %s:%d: %s; retrying in %gs",
                         self.leader.broker_id, self.leader.host, self.leader.port, exc, backoff)
                self._drop_connection()
                await asyncio.sleep(backoff)
            except Exception:
                log.exception("replica fetcher for broker %d failed", self.leader.broker_id)
                self._drop_connection()
                await asyncio.sleep(backoff)

    async def _round(self) -> None:
        now = asyncio.get_running_loop().time()
        ready = {key: s for key, s in self.states.items() if s.delayed_until <= now}
        if not ready:
            await self._sleep_until_ready()
            return
        connection = await self._connect()
        version = self._fetch_version(connection)
        if version >= TRUNCATION_ON_FETCH_VERSION:
            for state in ready.values():
                if state.truncating and state.on_fetch and _latest_epoch(state.partition) >= 0:
                    state.truncating = False  # the fetch checks our last epoch
        truncating = {key: s for key, s in ready.items() if s.truncating}
        if truncating:
            await self._truncate(connection, truncating)
            return
        ready = self._unthrottled(ready)
        if not ready:
            await asyncio.sleep(THROTTLED_PAUSE_S)
            return
        await self._fetch(connection, ready, version)

    @staticmethod
    def _fetch_version(connection: BrokerConnection) -> int:
        """v12, or v11 from a leader whose ApiVersions stop there."""
        served = connection.broker_versions.get(ApiKey.FETCH)
        if served is None or served[1] >= FETCH_VERSION:
            return FETCH_VERSION
        return TRUNCATION_ON_FETCH_VERSION - 1

    def _unthrottled(self, states: dict[TopicPartition, _FetchState]) -> dict[TopicPartition, _FetchState]:
        """``states`` less the throttled partitions out of the ISR while the
        follower quota is exceeded."""
        quota = self.quota
        if quota is None or not quota.active or not quota.exceeded():
            return states
        me = self.config.broker_id
        return {key: state for key, state in states.items()
                if me in state.partition.isr or not quota.is_throttled(*key)}

    async def _sleep_until_ready(self) -> None:
        self._wakeup.clear()
        delays = [s.delayed_until for s in self.states.values()]
        timeout = (min(delays) - asyncio.get_running_loop().time()) if delays else None
        try:
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        except TimeoutError:
            pass

    async def _connect(self) -> BrokerConnection:
        if self._connection is None or self._connection.closed:
            self._connection = await BrokerConnection.open(
                self.leader.host, self.leader.port,
                client_id=f"kcore-replica-fetcher-{self.config.broker_id}",
                request_timeout_s=self.config.socket_timeout_ms / 1000,
                security=inter_broker_security())
        return self._connection

    def _drop_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self.session.reset()

    def _current(self, key: TopicPartition, state: _FetchState) -> bool:
        """The answer for ``key`` still concerns this fetcher's leadership."""
        return (self.states.get(key) is state
                and state.partition.leader_epoch == state.leader_epoch
                and not state.partition.is_leader)

    def _delay(self, state: _FetchState) -> None:
        state.delayed_until = asyncio.get_running_loop().time() + self.config.backoff_ms / 1000

    # -- truncation ----------------------------------------------------------------------
    async def _truncate(self, connection: BrokerConnection,
                        states: dict[TopicPartition, _FetchState]) -> None:
        asked: dict[TopicPartition, int] = {}
        for key, state in states.items():
            epoch = state.partition.log.leader_epoch_cache.latest_epoch
            if epoch is None or epoch < 0:
                self._truncate_to_high_watermark(state)
            else:
                asked[key] = epoch
        if not asked:
            return
        topics: dict[str, list[dict]] = {}
        for (topic, index), epoch in asked.items():
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": states[(topic, index)].leader_epoch,
                "leader_epoch": epoch})
        response = await connection.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": self.config.broker_id,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]},
            version=OFFSET_FOR_LEADER_EPOCH_VERSION)
        for topic in response.topics:
            for result in topic.partitions:
                key = (topic.topic, result.partition)
                if key not in states or not self._current(key, states[key]):
                    continue
                state = states[key]
                if result.error_code != ErrorCode.NONE:
                    log.info("%s-%d: OffsetForLeaderEpoch from broker %d: error %d", *key,
                             self.leader.broker_id, result.error_code)
                    self._delay(state)
                    continue
                self._apply_epoch_end(state, result.leader_epoch, result.end_offset)

    def _apply_epoch_end(self, state: _FetchState, leader_epoch: int, end_offset: int) -> None:
        """An OffsetForLeaderEpoch answer: cut our log (``_cut_to_epoch_end``);
        when we never had the leader's epoch the next round asks again with
        our older one."""
        if end_offset < 0:
            self._truncate_to_high_watermark(state)
            return
        if not _cut_to_epoch_end(state.partition, leader_epoch, end_offset):
            state.rounds += 1
            if state.rounds < MAX_TRUNCATION_ROUNDS:
                return  # still truncating: the next round asks for our older epoch
        state.truncating = False

    def _truncate_to_high_watermark(self, state: _FetchState) -> None:
        state.partition.truncate_to(state.partition.high_watermark)
        state.truncating = False

    # -- fetch -----------------------------------------------------------------------------
    async def _fetch(self, connection: BrokerConnection,
                     states: dict[TopicPartition, _FetchState], version: int) -> None:
        config = self.config
        on_fetch = version >= TRUNCATION_ON_FETCH_VERSION
        wanted = {key: FetchState(state.partition.log_end_offset, state.partition.log_start_offset,
                                  config.partition_max_bytes, state.leader_epoch,
                                  _latest_epoch(state.partition) if on_fetch else -1)
                  for key, state in states.items()}
        request = self.session.build(wanted)
        response = await connection.request(ApiKey.FETCH, {
            "replica_id": config.broker_id, "max_wait_ms": config.max_wait_ms,
            "min_bytes": config.min_bytes, "max_bytes": config.max_bytes,
            "isolation_level": READ_UNCOMMITTED, "session_id": request.session_id,
            "session_epoch": request.session_epoch,
            "topics": [{"topic": topic, "partitions": [{
                "partition": index, "current_leader_epoch": state.current_leader_epoch,
                "fetch_offset": state.fetch_offset, "last_fetched_epoch": state.last_fetched_epoch,
                "log_start_offset": state.log_start_offset,
                "partition_max_bytes": state.max_bytes} for index, state in partitions]}
                for topic, partitions in _by_topic(request.to_send.items()).items()],
            "forgotten_topics_data": [
                {"topic": topic, "partitions": [index for index, _ in partitions]}
                for topic, partitions in _by_topic((key, None) for key in request.forgotten).items()],
            "rack_id": ""},
            version=version,
            timeout_s=(config.max_wait_ms + config.socket_timeout_ms) / 1000)
        if not self.session.handle_response(response.error_code, response.session_id):
            log.info("fetch session with broker %d ended (error %d); starting a new one",
                     self.leader.broker_id, response.error_code)
            return
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, context="replica fetch")
        durable = []
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic, data.partition_index)
                if key not in states or not self._current(key, states[key]):
                    continue
                state = states[key]
                future = self._process(state, data)
                if future is not None:
                    durable.append(future)
        for future in durable:
            try:
                await asyncio.shield(future)
            except Exception as exc:  # LogError from a failed fsync: the partition cut itself
                log.error("follower fsync failed: %s", exc)

    def _process(self, state: _FetchState, data) -> asyncio.Future | None:
        partition = state.partition
        code = data.error_code
        if code == ErrorCode.NONE and data.diverging_epoch.epoch >= 0:
            self._diverged(state, data.diverging_epoch.epoch, data.diverging_epoch.end_offset)
            return None
        if code == ErrorCode.NONE:
            future = None
            if data.records:
                if self.quota is not None and self.quota.is_throttled(partition.topic, partition.index):
                    self.quota.record(len(data.records))
                try:
                    future = partition.append_records_as_follower(data.records, self._syncer())
                except PartitionError as exc:
                    self._append_failed(state, exc)
                    return None
            partition.update_follower_high_watermark(data.high_watermark, data.log_start_offset)
            return future
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._out_of_range(state, data)
            return None
        log.info("%s-%d: fetch from broker %d: error %d", partition.topic, partition.index,
                 self.leader.broker_id, code)
        self._delay(state)
        return None

    def _diverged(self, state: _FetchState, epoch: int, end_offset: int) -> None:
        """A v12 answer's diverging epoch: cut our log there and fetch on;
        the next fetch names our new latest epoch, which the leader checks
        again (Kafka's truncateOnFetchResponse). The answer's high
        watermark waits for that fetch."""
        partition = state.partition
        log.info("%s-%d: diverging from the leader's log at epoch %d (ends at %d)",
                 partition.topic, partition.index, epoch, end_offset)
        if _cut_to_epoch_end(partition, epoch, end_offset):
            state.rounds = 0
            return
        state.rounds += 1
        if state.rounds >= MAX_TRUNCATION_ROUNDS:  # our epochs make no sense to it: ask
            self._truncate_by_exchange(state)

    def _truncate_by_exchange(self, state: _FetchState) -> None:
        """Truncate through OffsetForLeaderEpoch before the next fetch."""
        state.truncating = True
        state.on_fetch = False
        state.rounds = 0

    def _append_failed(self, state: _FetchState, exc: PartitionError) -> None:
        """A disk that failed the write (ENOSPC, EIO: KAFKA_STORAGE_ERROR)
        says nothing about the logs diverging: the same fetch is retried
        after the back-off, the log kept as it is. Meanwhile this replica's
        log end stands still and the leader drops it from the ISR after
        replica.lag.time.max.ms. Anything else the leader sent that does
        not append (offsets, epochs) may mean divergence: truncate first."""
        partition = state.partition
        self._delay(state)
        if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
            log.warning("%s-%d: cannot append the leader's batches: %s; retrying in %g s",
                        partition.topic, partition.index, exc.message,
                        self.config.backoff_ms / 1000)
            return
        log.warning("%s-%d: cannot append the leader's batches: %s; checking for divergence",
                    partition.topic, partition.index, exc.message)
        state.truncating = True
        state.rounds = 0

    def _out_of_range(self, state: _FetchState, data) -> None:
        """Our log end is outside the leader's log: behind its start (start
        over there) or past its end (truncate by epoch)."""
        partition = state.partition
        if 0 <= partition.log_end_offset < data.log_start_offset:
            log.info("%s-%d: log end %d is before the leader's log start %d; starting over",
                     partition.topic, partition.index, partition.log_end_offset,
                     data.log_start_offset)
            partition.truncate_fully_and_start_at(data.log_start_offset)
        else:
            self._truncate_by_exchange(state)


def _latest_epoch(partition: Partition) -> int:
    """The leader epoch of the last batch in the partition's log, or -1."""
    return partition.log.leader_epoch_cache.latest_epoch


def _cut_to_epoch_end(partition: Partition, leader_epoch: int, end_offset: int) -> bool:
    """Kafka's follower rule for a leader's (epoch, end offset): cut at
    min(that end offset, our end of that epoch, our log end); if we never
    had that epoch, cut at our end of the largest epoch below it and
    return False (the divergence must be checked again)."""
    ours, our_end = partition.end_offset_for_epoch(leader_epoch)
    if our_end < 0:
        partition.truncate_to(min(end_offset, partition.log_end_offset))
    elif ours != leader_epoch:
        partition.truncate_to(min(our_end, partition.log_end_offset))
        return False
    else:
        partition.truncate_to(min(our_end, end_offset, partition.log_end_offset))
    return True


def _by_topic(items) -> dict[str, list]:
    """((topic, partition), value) pairs grouped: topic -> [(partition, value)]."""
    topics: dict[str, list] = {}
    for (topic, index), value in items:
        topics.setdefault(topic, []).append((index, value))
    return topics

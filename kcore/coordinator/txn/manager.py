"""The ``__transaction_state`` topic: creation, appends, and the cache of
transactional ids rebuilt from it.

Like ``__consumer_offsets``: created through the controller on first use
(FindCoordinator with key type 1, or InitProducerId) with
`transaction.state.log.num.partitions` partitions and
`transaction.state.log.replication.factor` replicas, compacted, with
min.insync.replicas = `transaction.state.log.min.isr`. A transactional id
lives in partition abs(hashCode(id)) % partitions, and its coordinator is
that partition's leader; the coordinator epoch is the partition's leader
epoch, carried by every marker so leaders can fence a deposed coordinator.

A state change is acknowledged only once the ISR has its record
(``append``); replay at leadership (``load_partition``) keeps the last
record per id, a null value deleting it.

Concurrency contract: not thread-safe; the broker's event loop owns it.
Everything but ``append`` is synchronous.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kcore.clock import SYSTEM_CLOCK, Clock, monotonic_ms, wall_ms
from kcore.controller.base import Controller
from kcore.coordinator.internal_log import APPEND_ERRORS, StoreError, append_replicated, iter_log_batches
from kcore.coordinator.txn import records as txn_records
from kcore.coordinator.txn.metadata import TransactionMetadata, TxnTransit
from kcore.coordinator.txn.state import TransactionState
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata import TopicError
from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode
from kcore.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
# How long a state change waits for the ISR (Kafka's request.timeout.ms default).
APPEND_TIMEOUT_S = 30.0

# appendTransactionToLog's error translation (Kafka TransactionStateManager):
# what a producer can act on, rather than the partition's own error.
_APPEND_ERRORS: dict[int, int] = {code: mapped for code, mapped in APPEND_ERRORS.items()
                                  if code != ErrorCode.INVALID_FETCH_SIZE}


@dataclass(frozen=True)
class TxnConfig:
    num_partitions: int = 50
    replication_factor: int = 3
    min_isr: int = 2
    segment_bytes: int = 104_857_600
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 7 * 86_400_000
    abort_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000


@dataclass
class TxnPartition:
    """The transactional ids of one __transaction_state partition this
    broker leads, under the leader epoch it leads it with."""
    coordinator_epoch: int
    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)


class CoordinatorError(Exception):
    def __init__(self, error_code: int):
        super().__init__(ErrorCode(error_code).name)
        self.error_code = error_code


class TransactionStateManager:
    def __init__(self, controller: Controller, replica_manager: ReplicaManager, config: TxnConfig,
                 clock: Clock = SYSTEM_CLOCK):
        self.controller = controller
        self.replica_manager = replica_manager
        self.config = config
        # The transaction coordinator's one clock (kcore/clock.py): wall
        # for what is written, monotonic for timeouts (metadata.py).
        self.clock = clock
        self.owned: dict[int, TxnPartition] = {}
        self.syncer: GroupCommitSyncer | None = None

    # -- topic ---------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        info = self.controller.topic(TRANSACTION_STATE_TOPIC)
        return info.num_partitions if info is not None else self.config.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return txn_records.partition_for(transactional_id, self.num_partitions)

    def topic_configs(self) -> dict[str, str]:
        return {"cleanup.policy": "compact", "compression.type": "producer",
                "segment.bytes": str(self.config.segment_bytes),
                "unclean.leader.election.enable": "false",
                "min.insync.replicas": str(min(self.config.min_isr,
                                               self.config.replication_factor))}

    async def ensure_topic(self) -> None:
        """Create the topic when it does not exist; raises TopicError (e.g.
        INVALID_REPLICATION_FACTOR while too few brokers are live)."""
        if self.controller.topic(TRANSACTION_STATE_TOPIC) is not None:
            return
        try:
            await self.controller.create_topic(TRANSACTION_STATE_TOPIC, self.config.num_partitions,
                                               self.config.replication_factor, self.topic_configs())
            log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC,
                     self.config.num_partitions)
        except TopicError as exc:
            if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise

    # -- lookups -------------------------------------------------------------------------
    def get(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """(coordinator epoch, metadata or None); raises CoordinatorError
        NOT_COORDINATOR when this broker does not lead the id's partition."""
        owned = self.owned.get(self.partition_for(transactional_id))
        if owned is None:
            raise CoordinatorError(ErrorCode.NOT_COORDINATOR)
        return owned.coordinator_epoch, owned.transactions.get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> tuple[int, TransactionMetadata]:
        owned = self.owned.get(self.partition_for(metadata.transactional_id))
        if owned is None:
            raise CoordinatorError(ErrorCode.NOT_COORDINATOR)
        current = owned.transactions.setdefault(metadata.transactional_id, metadata)
        return owned.coordinator_epoch, current

    def all_transactions(self) -> list[TransactionMetadata]:
        return [metadata for owned in self.owned.values()
                for metadata in owned.transactions.values()]

    def timed_out(self, monotonic_now_ms: int) -> list[TransactionMetadata]:
        """Ongoing transactions past their timeout (by the monotonic clock)
        with nothing pending."""
        return [m for m in self.all_transactions()
                if not m.pending and m.timed_out(monotonic_now_ms)]

    # -- writes --------------------------------------------------------------------------
    async def append(self, transactional_id: str, coordinator_epoch: int,
                     metadata: TransactionMetadata, transit: TxnTransit) -> int:
        """Write ``transit`` and make it current once the ISR has it.
        Returns Kafka's error for the client; on any error the metadata
        stays as it was (its pending state cleared)."""
        index = self.partition_for(transactional_id)
        value = (None if transit.state is TransactionState.DEAD
                 else txn_records.encode_value(transit.to_value()))
        batch = record_codec.build_batch([record_codec.Record(
            key=txn_records.encode_key(transactional_id), value=value,
            timestamp=wall_ms(self.clock))])
        code = await self._append_batch(index, batch)
        owned = self.owned.get(index)
        if code == ErrorCode.NONE and (owned is None or owned.coordinator_epoch != coordinator_epoch
                                       or owned.transactions.get(transactional_id) is not metadata):
            code = ErrorCode.NOT_COORDINATOR  # deposed while the ISR copied it
        if code != ErrorCode.NONE:
            metadata.abort_transition()
            return code
        metadata.complete_transition(transit)
        if transit.state is TransactionState.DEAD and owned is not None:
            owned.transactions.pop(transactional_id, None)
        return ErrorCode.NONE

    async def _append_batch(self, index: int, batch: bytearray) -> int:
        partition = self.replica_manager.get(TRANSACTION_STATE_TOPIC, index)
        if partition is None or not partition.is_leader:
            return ErrorCode.NOT_COORDINATOR
        try:
            replicated = append_replicated(partition, batch, self.syncer, APPEND_TIMEOUT_S)
            if replicated is not None:
                await replicated
        except StoreError as exc:
            log.info("%s-%d: append failed: %s (%s)", TRANSACTION_STATE_TOPIC, index,
                     ErrorCode(exc.error_code).name, exc)
            return _APPEND_ERRORS.get(exc.error_code, exc.error_code)
        return ErrorCode.NONE

    # -- leadership ----------------------------------------------------------------------
    def load_partition(self, index: int, coordinator_epoch: int) -> TxnPartition:
        """Replay one partition (this broker just became its leader)."""
        loaded = TxnPartition(coordinator_epoch)
        partition = self.replica_manager.get(TRANSACTION_STATE_TOPIC, index)
        count = 0
        if partition is not None:
            for batch in iter_log_batches(partition):
                if batch.is_control:
                    continue
                for record in batch.records():
                    count += 1
                    self._apply(record, loaded.transactions)
        now, monotonic_now = wall_ms(self.clock), monotonic_ms(self.clock)
        for metadata in loaded.transactions.values():
            metadata.anchor_start(now, monotonic_now)
        self.owned[index] = loaded
        log.log(logging.INFO if count else logging.DEBUG,
                "replayed %d records of %s-%d (coordinator epoch %d): %d transactional ids",
                count, TRANSACTION_STATE_TOPIC, index, coordinator_epoch, len(loaded.transactions))
        return loaded

    def unload_partition(self, index: int) -> None:
        if self.owned.pop(index, None) is not None:
            log.info("no longer coordinating the transactions of %s-%d", TRANSACTION_STATE_TOPIC,
                     index)

    @staticmethod
    def _apply(record: record_codec.Record, transactions: dict[str, TransactionMetadata]) -> None:
        try:
            if record.key is None:
                raise txn_records.RecordFormatError("record without a key")
            transactional_id = txn_records.decode_key(record.key)
            if record.value is None:
                transactions.pop(transactional_id, None)
                return
            value = txn_records.decode_value(record.value)
        except (txn_records.RecordFormatError, ValueError) as exc:
            log.warning("%s: skipping record at offset %s: %s", TRANSACTION_STATE_TOPIC,
                        record.offset, exc)
            return
        transactions[transactional_id] = TransactionMetadata.from_value(transactional_id, value)

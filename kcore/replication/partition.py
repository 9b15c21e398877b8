"""One partition replica on this broker: log, role, leader epoch, HW, ISR.

A partition is the leader or a follower of its topic partition, as the
controller says (``make_leader`` / ``make_follower``, from LeaderAndIsr).

Leader, produce path (docs/architecture.md#produce-path): native
validation of the v2 batch (sizes, magic, CRC-32C, record count) -> size
and codec checks -> producer-state check (a retry of one of the last 5
batches gets its original offset back; a transactional batch must belong
to an ongoing transaction, KIP-890) -> optional conversion to the
topic's compression.type or LogAppendTime -> Log.append (offsets and
leader epoch patched in place) -> producer state -> high watermark.

The high watermark (HW) is the smallest log end offset over the ISR: the
leader's own, or with flush.messages=1 the offset below which its log is on
disk (group commit, log/durability.py), and each in-sync follower's, as
its fetches report it (replica_state.py). Consumers see nothing at or above
it; an acks=all produce is answered once it passes the batch. With one
replica the HW follows the leader alone. A failed fsync truncates the log
back to the HW (nothing past it was acknowledged) and reloads the producer
state, so retries append afresh.

ISR changes are proposed by the leader and decided by the controller
(``isr_changes``, AlterPartition in a cluster): a follower that reaches the
HW joins, one not caught up for ``replica.lag.time.max.ms`` leaves. While a
change is in flight the HW counts the joining replica already (Kafka's
"maximal ISR"), and ``min.insync.replicas`` the committed ISR only. The
lag is measured on the monotonic clock (kcore/clock.py), so a step of the
wall clock drops no follower and keeps none that stopped fetching; the
wall clock only stamps records (LogAppendTime, markers) and judges their
timestamps.

DeleteRecords (``delete_records``): the leader moves its log start offset
and answers once the low watermark, the smallest log start offset over
the live replicas as their fetches report it, reaches the new start.

Follower: ``append_records_as_follower`` copies the leader's batches with
their offsets and epochs, keeps the producer state (it may lead next), and
takes the HW and log start offset the leader reports (deleting its
segments below that start). ``truncate_to`` cuts a divergent tail (after
OffsetForLeaderEpoch, see fetcher.py).

Not safe across await: every method runs to completion on the event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from typing_extensions import Buffer

from kcore._native import records as native_records
from kcore._native.batch_layout import COMPRESSION_CODEC_MASK
from kcore._native.records import BatchHeader
from kcore.clock import SYSTEM_CLOCK, Clock, monotonic_ms, wall_ms
from kcore.log.durability import GroupCommitSyncer, SyncFailedError
from kcore.log.errors import LogError
from kcore.log.log import AppendInfo, Log
from kcore.log.log_validator import RecordPolicy, RecordValidationError, SchemaIdCheck, validate_records
from kcore.log.producer_state import ProducerStateError, ProducerStateManager
from kcore.log.txn_index import AbortedTxn
from kcore.metadata import PartitionState
from kcore.protocol import records as record_codec
from kcore.protocol.compression import max_decompressed_size
from kcore.protocol.errors import ErrorCode
from kcore.replication.replica_state import FollowerState, HighWatermarkWaiters, low_watermark

logger = logging.getLogger(__name__)

CODEC_IDS = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

# (partition, proposed ISR) -> None; the answer comes back through
# Partition.on_isr_change.
IsrChangeRequest = Callable[["Partition", list[int]], None]
SchemaChecks = Callable[[str, dict[str, Any]], tuple[SchemaIdCheck | None, SchemaIdCheck | None]]


class PartitionError(Exception):
    """``record_errors``: [(batch index, message)] of the records that made
    a produced batch fail (KIP-467), empty when the batch failed as a whole."""

    def __init__(self, error_code: int, message: str = "",
                 record_errors: Sequence[tuple[int, str]] = ()):
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.record_errors = list(record_errors)


@dataclass
class LogAppendResult:
    """A leader's append as the produce path answers it (Kafka's
    LogAppendResult); ``kcore.client.ProduceResult`` is the client's."""
    base_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False
    # flush.messages=1: resolves once the batch is on disk (group commit);
    # fails with PartitionError(KAFKA_STORAGE_ERROR) if the fsync fails.
    durable: asyncio.Future | None = None
    # The offset the high watermark must reach for acks=all.
    required_offset: int = 0


class Partition:
    """One replica of a topic partition (see module doc). A new Partition
    is the leader of a single-replica partition at epoch 0 until told
    otherwise."""

    def __init__(self, topic: str, index: int, log: Log, configs: dict[str, Any],
                 broker_id: int, producer_expiration_ms: int = 86_400_000,
                 high_watermark: int | None = None, clock: Clock = SYSTEM_CLOCK):
        self.topic = topic
        self.clock = clock
        self.index = index
        self.log = log
        self.configs = configs
        self.broker_id = broker_id
        self.leader_id = broker_id
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.replicas = [broker_id]
        self.isr = [broker_id]
        self.leader_epoch_start_offset = 0
        self._producers = ProducerStateManager(log.dir, producer_expiration_ms)
        self._producers_loaded = False  # see the ``producers`` property
        # Where a first load's replay may stop: the log end at open. Every
        # batch appended since with a producer id loaded the state before it
        # was applied, so what lies beyond is batches without one (a plain,
        # non-idempotent producer's), which change nothing. Without this
        # bound the first fetch after 1 GB of such appends re-read the
        # headers of all of it (~0.35 CPU-s per GB, charged to the fetch).
        self._replay_end_offset = log.log_end_offset
        self.isr_changes: IsrChangeRequest | None = None
        self.replica_lag_time_max_ms = 30_000
        self._followers: dict[int, FollowerState] = {}
        self._pending_isr: list[int] | None = None
        self._waiters: list[asyncio.Future] = []          # consumers: the HW moved
        self._replica_waiters: list[asyncio.Future] = []  # followers: the log grew
        self._hw_waiters = HighWatermarkWaiters()         # acks=all produce
        self._lw_waiters = HighWatermarkWaiters()         # DeleteRecords, on the low watermark
        # Whether a replica's broker is alive (the replica manager's metadata
        # cache): a dead follower's log start offset holds no DeleteRecords back.
        self.is_live_broker: Callable[[int], bool] = lambda broker_id: True
        # Told (partition, log_grew) whenever the waiters above are woken:
        # the fetch sessions holding this partition (fetch_session.py).
        self.change_listener: Callable[[Partition, bool], None] | None = None
        # With schema validation on: (topic, configs) -> the (key, value) checks
        # of the ids records may carry (the schema registry's; log_validator.py).
        self.schema_checks: SchemaChecks | None = None
        self._policy: tuple[dict[str, Any], RecordPolicy] | None = None  # (the configs it is of, policy)
        self._syncer: GroupCommitSyncer | None = None  # once one was used
        # (marker offset, first offset) of transactions ended by a marker the
        # HW does not cover yet, in marker order (last_stable_offset).
        self._unreplicated_txns: deque[tuple[int, int]] = deque()
        # While the replica moves to another log dir: the copy being made
        # there (replication/log_dir_mover.py), which truncations follow.
        self.future_log: Log | None = None
        # Told (log dir path, reason) of an I/O error of the log (log_dirs.py).
        self.storage_error: Callable[[Path, str], None] | None = None
        if self.durable:
            # Whatever a crash left in the page cache becomes durable before
            # the high watermark covers it.
            log.flush()
        self._synced_offset = log.log_end_offset
        self.high_watermark = log.log_end_offset if high_watermark is None \
            else min(high_watermark, log.log_end_offset)

    @property
    def producers(self) -> ProducerStateManager:
        """The idempotent-producer state, loaded (snapshot, then a replay of
        the batch headers after it) on first use: a start with 10,000
        partitions read 10,000 snapshot files for partitions most of which
        nobody produced to or fetched from yet."""
        if not self._producers_loaded:
            self._load_producer_state(self.log.take_snapshot_offsets_at_open(),
                                      self._replay_end_offset)
        return self._producers

    @property
    def durable(self) -> bool:
        """flush.messages=1: acknowledge and expose only synced data."""
        return self.configs.get("flush.messages") == 1

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def topic_partition(self) -> tuple[str, int]:
        return self.topic, self.index

    # -- role changes (LeaderAndIsr) ----------------------------------------------------
    def is_newer(self, state: PartitionState) -> bool:
        """A state the controller sent is applied only when it is newer than
        what this replica knows (leader epoch, then partition epoch)."""
        return (state.leader_epoch, state.partition_epoch) > (self.leader_epoch, self.partition_epoch)

    def make_leader(self, state: PartitionState) -> bool:
        """Become (or stay) the leader; returns whether the epoch is new."""
        new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
        self._apply_state(state)
        self._pending_isr = None
        if new_epoch:
            self.leader_epoch_start_offset = self.log.log_end_offset
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
            now = monotonic_ms(self.clock)
            self._followers = {}
            for replica in self.replicas:
                if replica != self.broker_id:
                    follower = FollowerState(replica)
                    follower.reset(now, replica in self.isr)
                    self._followers[replica] = follower
        else:
            # A partition created leading at epoch 0 comes here, its followers
            # unknown yet: an ISR member counts as caught up from now, as at
            # a new epoch (else the next ISR check dropped every one of them).
            now = monotonic_ms(self.clock)
            for replica in self.replicas:
                if replica != self.broker_id and replica not in self._followers:
                    follower = FollowerState(replica)
                    follower.reset(now, replica in self.isr)
                    self._followers[replica] = follower
        self.maybe_increment_high_watermark()
        return new_epoch

    def make_follower(self, state: PartitionState) -> bool:
        """Become a follower of ``state.leader``; returns whether the leader
        or its epoch changed (the fetcher then truncates and restarts)."""
        changed = (state.leader != self.leader_id or state.leader_epoch != self.leader_epoch)
        was_leader = self.is_leader
        self._apply_state(state)
        self._followers = {}
        self._pending_isr = None
        if was_leader or changed:
            self._hw_waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            self._lw_waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            self.wake_waiters()
            self._wake_replica_waiters()
        return changed

    def _apply_state(self, state: PartitionState) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = list(state.replicas)
        self.isr = list(state.isr)

    def on_isr_change(self, error_code: int, leader_epoch: int, isr: Sequence[int],
                      partition_epoch: int) -> None:
        """The controller's answer to a proposed ISR change."""
        self._pending_isr = None
        if error_code != ErrorCode.NONE or leader_epoch != self.leader_epoch:
            if error_code != ErrorCode.NONE:
                logger.info("%s-%d: ISR change refused with error %d", self.topic, self.index,
                            error_code)
            return
        if partition_epoch > self.partition_epoch:
            self.isr = list(isr)
            self.partition_epoch = partition_epoch
            logger.info("%s-%d: ISR is now %s", self.topic, self.index, self.isr)
        self.maybe_increment_high_watermark()

    # -- produce ---------------------------------------------------------------
    def append_records_to_leader(self, records: memoryview, required_acks: int,
                                 syncer: GroupCommitSyncer | None = None,
                                 verification_guard: int | None = None) -> LogAppendResult:
        """Append one produced batch. With flush.messages=1 and a group
        commit ``syncer`` the result's ``durable`` future says when it is
        on disk; without a syncer the log is fsynced here, before return.
        ``verification_guard``: a client's produce with transaction
        verification on (KIP-890; log/producer_state.py), None otherwise."""
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is not the leader of "
                                 f"{self.topic}-{self.index}")
        batches = self._validate(records)
        if required_acks == -1 and len(self.isr) < self.configs["min.insync.replicas"]:
            raise PartitionError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"ISR {self.isr} is smaller than min.insync.replicas="
                                 f"{self.configs['min.insync.replicas']}")
        batch = batches[0]
        producer_id, producer_epoch = batch.producer_id, batch.producer_epoch
        base_sequence, last_offset_delta = batch.base_sequence, batch.last_offset_delta
        if producer_id >= 0:
            try:
                original = None
                if base_sequence >= 0:
                    original = self.producers.check(
                        producer_id, producer_epoch, base_sequence, last_offset_delta,
                        verification_guard if batch.is_transactional else None)
                else:
                    self.producers.check_epoch(producer_id, producer_epoch)
            except ProducerStateError as exc:
                self._validate(records, check_crc=True)  # corrupt bytes: CORRUPT_MESSAGE first
                logger.info("%s-%d: refused a batch: %s", self.topic, self.index, exc)
                raise PartitionError(exc.error_code, str(exc)) from None
            if original is not None:
                self._validate(records, check_crc=True)
                # The original may still wait for its fsync or its replicas.
                return LogAppendResult(original.first_offset, -1, self.log.log_start_offset, True,
                                     self._make_durable(syncer), original.last_offset + 1)
        converted = self._must_convert(batch.attributes)
        if converted:
            # Conversion rewrites the CRC: check the producer's first.
            self._validate(records, check_crc=True)
        buffer, log_append_time = self._convert(records, batch.attributes) if converted \
            else (records, -1)
        durable = self.durable
        # Unconverted bytes get their CRC checked by the log, on a second
        # core while they are written when the batch is large; unless
        # _validate checked it already to read the records (compacted
        # topics, bounded timestamps, schema validation): a second check of
        # a 1 MB batch cost ~100 us (bench/bench_schema_registry.py path).
        crc_checked = self._record_policy().reads_records
        info = self._append_to_log(buffer, validate=not converted and not crc_checked)
        if producer_id >= 0:
            self.producers.update(producer_id, producer_epoch, base_sequence, last_offset_delta,
                                  info.first_offset, batch.max_timestamp, batch.is_transactional)
        self._wake_replica_waiters()
        result = LogAppendResult(info.first_offset, log_append_time, self.log.log_start_offset,
                               required_offset=info.last_offset + 1)
        if not durable:
            self._synced_offset = self.log.log_end_offset
            self.maybe_increment_high_watermark()
            return result
        result.durable = self._make_durable(syncer, buffer, info.first_offset)
        return result

    def _append_to_log(self, records: Buffer, **options: bool) -> AppendInfo:
        """Log.append at this leader epoch, its errors as PartitionError;
        with flush.messages=1 the caller makes the batches durable."""
        try:
            return self.log.append(records, self.leader_epoch, defer_flush=self.durable, **options)
        except LogError as exc:
            if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
                self._report_storage_error(str(exc))
            raise PartitionError(exc.error_code, str(exc)) from exc
        except OSError as exc:
            self._report_storage_error(f"append failed: {exc.strerror}")
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"append failed: {exc.strerror}") from exc

    def _report_storage_error(self, reason: str) -> None:
        """The log's dir may have failed: tell its owner (log_dirs.py)."""
        if self.storage_error is not None:
            self.storage_error(self.log.dir, reason)

    def wait_for_replicas(self, required_offset: int) -> asyncio.Future | None:
        """acks=all: None when the high watermark is at ``required_offset``
        already, else a future resolving to Kafka's error code for the
        produce once it is (NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND) or the
        leadership moved (NOT_LEADER_OR_FOLLOWER)."""
        if self.high_watermark >= required_offset or not self.is_leader:
            return None
        self._hw_waiters.prune()
        return self._hw_waiters.add(required_offset)

    def acks_all_error(self) -> int:
        """Error for an acks=all produce whose offset the HW has reached."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(self.isr) < self.configs["min.insync.replicas"]:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def _validate(self, records: memoryview, check_crc: bool = False) -> list[BatchHeader]:
        """Header checks, then the per-record rules of the topic
        (log_validator.py). The CRC is checked here when ``check_crc`` or
        the records are about to be read (compacted topics, bounded
        timestamps); otherwise the log checks it as it appends."""
        policy = self._record_policy()
        check_crc = check_crc or policy.reads_records
        try:
            batches = native_records.validate_batches(records, check_crc=check_crc)
        except native_records.CorruptBatchError as exc:
            raise PartitionError(ErrorCode.CORRUPT_MESSAGE,
                                 f"corrupt record batch ({exc.reason})") from None
        if len(batches) != 1:
            raise PartitionError(ErrorCode.INVALID_RECORD,
                                 f"produce v3+ needs exactly one record batch, got {len(batches)}")
        batch = batches[0]
        size = batch.size_in_bytes
        if size > self.configs["max.message.bytes"]:
            raise PartitionError(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"batch of {size} bytes exceeds max.message.bytes="
                                 f"{self.configs['max.message.bytes']}")
        if batch.compression_codec > 4:
            raise PartitionError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                 f"unknown compression codec {batch.compression_codec}")
        if batch.is_control:
            raise PartitionError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if batch.timestamp_type == 1 and not check_crc:
            return self._validate(records, check_crc=True)  # its records are about to be read
        try:
            validate_records(records, batch, policy, wall_ms(self.clock), f"{self.topic}-{self.index}")
        except RecordValidationError as exc:
            raise PartitionError(exc.error_code, exc.message, exc.record_errors) from None
        return batches

    def _record_policy(self) -> RecordPolicy:
        """The record rules of the topic's configs, kept until they change
        (every change replaces ``configs``), with the schema registry's
        checks attached when validation is on (kept while it gives the
        same ones): a produce of 16 KiB batches paid ~15 us a batch for
        building them anew (bench/bench_schema_registry.py path)."""
        cached = self._policy
        if cached is None or cached[0] is not self.configs:
            cached = self._policy = (self.configs, RecordPolicy.from_configs(self.configs))
        policy = cached[1]
        if policy.validates_schemas and self.schema_checks is not None:
            checks = self.schema_checks(self.topic, self.configs)
            if checks[0] is not policy.key_schemas or checks[1] is not policy.value_schemas:
                policy = replace(policy, key_schemas=checks[0], value_schemas=checks[1])
                self._policy = (cached[0], policy)
        return policy

    def _must_convert(self, attributes: int) -> bool:
        wanted = self.configs["compression.type"]
        return (wanted != "producer" and CODEC_IDS[wanted] != attributes & COMPRESSION_CODEC_MASK) \
            or self.configs["message.timestamp.type"] == "LogAppendTime"

    def _convert(self, records: memoryview, attributes: int) -> tuple[bytearray | memoryview, int]:
        """Recompress for the topic's compression.type and stamp
        LogAppendTime; both change CRC-covered bytes, so both recompute it.
        Returns the bytes to append (``records`` itself, stamped in place,
        when only the timestamp changes) and the LogAppendTime (-1 if
        CreateTime)."""
        buffer: bytearray | memoryview = records
        wanted = self.configs["compression.type"]
        if wanted != "producer" and CODEC_IDS[wanted] != attributes & COMPRESSION_CODEC_MASK:
            level = self.configs.get(f"compression.{wanted}.level")  # gzip, lz4 and zstd have one
            buffer = self._recompress(records, CODEC_IDS[wanted], level)
        if self.configs["message.timestamp.type"] != "LogAppendTime":
            return buffer, -1
        now = wall_ms(self.clock)
        if memoryview(buffer).readonly:
            buffer = bytearray(buffer)
        native_records.stamp_log_append_time(buffer, now)
        return buffer, now

    def _recompress(self, records: memoryview, codec: int, level: int | None) -> bytearray:
        """The batch in ``codec``; its records inflate to at most 64 times
        max.message.bytes (MESSAGE_TOO_LARGE past it, log_validator.py)."""
        try:
            return record_codec.recompress_batch(
                bytes(records), codec, level,
                max_decompressed_size(self.configs["max.message.bytes"]))
        except record_codec.RecordsTooLargeError as exc:
            raise PartitionError(ErrorCode.MESSAGE_TOO_LARGE, str(exc)) from None
        except record_codec.InvalidRecordError as exc:
            raise PartitionError(ErrorCode.INVALID_RECORD, str(exc)) from None

    # -- follower side -----------------------------------------------------------------
    def append_records_as_follower(self, records: Buffer,
                                   syncer: GroupCommitSyncer | None = None) -> asyncio.Future | None:
        """Append the leader's batches as they are (offsets, epochs, CRCs
        checked). Returns the fsync future with flush.messages=1 (the
        fetcher reports the new offset only once it resolved), else None."""
        durable = self.durable
        info = self._append_to_log(records, assign_offsets=False)
        self._update_producers_from((header, records) for header in info.batches)
        if not durable:
            self._synced_offset = self.log.log_end_offset
            return None
        return self._make_durable(syncer, records, info.first_offset)

    def _update_producers_from(self, batches: Iterable[tuple[BatchHeader, Buffer]]) -> None:
        """Producer state after appended or replayed batches, each with the
        buffer its ``position`` points into (markers are read from it)."""
        for batch, data in batches:
            if batch.producer_id < 0:
                continue
            if batch.is_control:
                self._replay_marker(batch, data)
                continue
            self.producers.update(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                  batch.last_offset_delta, batch.base_offset, batch.max_timestamp,
                                  batch.is_transactional)

    def _replay_marker(self, header: BatchHeader, data: Buffer) -> None:
        view = memoryview(data)[header.position:header.position + header.size_in_bytes]
        batch = record_codec.RecordBatch(view)
        try:
            commit = batch.control_type is record_codec.ControlType.COMMIT
            coordinator_epoch = batch.coordinator_epoch
        except record_codec.InvalidRecordError as exc:
            logger.warning("%s-%d: unreadable marker at offset %d: %s", self.topic, self.index,
                           header.base_offset, exc)
            return
        self._complete_transaction(header.producer_id, header.producer_epoch, coordinator_epoch,
                                   header.base_offset, commit, header.max_timestamp)

    # -- transactions ------------------------------------------------------------------
    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          commit: bool, syncer: GroupCommitSyncer | None = None) -> LogAppendResult:
        """WriteTxnMarkers on the leader: end ``producer_id``'s transaction
        here with a COMMIT or ABORT control batch. Raises PartitionError
        (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, INVALID_PRODUCER_EPOCH,
        TRANSACTION_COORDINATOR_FENCED); the caller waits for the ISR as
        for an acks=all produce."""
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is not the leader of "
                                 f"{self.topic}-{self.index}")
        if len(self.isr) < self.configs["min.insync.replicas"]:
            raise PartitionError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"ISR {self.isr} is smaller than min.insync.replicas="
                                 f"{self.configs['min.insync.replicas']}")
        try:
            self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        except ProducerStateError as exc:
            raise PartitionError(exc.error_code, str(exc)) from None
        timestamp = wall_ms(self.clock)
        batch = record_codec.build_control_batch(
            record_codec.ControlType.COMMIT if commit else record_codec.ControlType.ABORT,
            producer_id=producer_id, producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch, timestamp=timestamp)
        durable = self.durable
        info = self._append_to_log(batch)
        self._complete_transaction(producer_id, producer_epoch, coordinator_epoch,
                                   info.first_offset, commit, timestamp)
        self._wake_replica_waiters()
        result = LogAppendResult(info.first_offset, -1, self.log.log_start_offset,
                               required_offset=info.last_offset + 1)
        if not durable:
            self._synced_offset = self.log.log_end_offset
            self.maybe_increment_high_watermark()
            return result
        result.durable = self._make_durable(syncer, batch, info.first_offset)
        return result

    def _complete_transaction(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                              marker_offset: int, commit: bool, timestamp: int) -> None:
        """A marker is in the log (leader or follower): the transaction is
        over, but stays unstable until the high watermark passes its marker
        (Kafka's unreplicated transactions), so a read_committed consumer
        never reads past a marker a new leader might not have."""
        first_offset = self.producers.complete_transaction(producer_id, producer_epoch,
                                                           coordinator_epoch, timestamp)
        if first_offset < 0:
            return
        self._unreplicated_txns.append((marker_offset, first_offset))
        if not commit:
            # The marker is in the log and the producer state has moved on:
            # the entry must reach fetches even when its index file cannot be
            # written (a full disk), or read_committed consumers would read
            # the aborted records. It stays in memory; the log's next flush
            # writes it (txn_index.py).
            try:
                self.log.append_aborted_txn(AbortedTxn(producer_id, first_offset, marker_offset,
                                                       self._stable_offset_after(marker_offset)))
            except OSError as exc:
                logger.warning("%s-%d: aborted transaction of producer %d at %d kept in memory, "
                               "its index not written yet: %s", self.topic, self.index, producer_id,
                               marker_offset, exc)

    def _stable_offset_after(self, marker_offset: int) -> int:
        """The last stable offset once the transaction ended at
        ``marker_offset`` is replicated: the oldest transaction still open
        or unreplicated, else the offset after the marker."""
        candidates = [first for marker, first in self._unreplicated_txns if marker != marker_offset]
        unstable = self.producers.first_unstable_offset()
        if unstable is not None:
            candidates.append(unstable)
        return min(candidates) if candidates else marker_offset + 1

    def update_follower_high_watermark(self, leader_high_watermark: int,
                                       leader_log_start_offset: int) -> None:
        new_hw = min(leader_high_watermark, self._synced_offset, self.log.log_end_offset)
        if new_hw != self.high_watermark:
            self.high_watermark = new_hw
            self.wake_waiters()  # consumers reading from this follower (KIP-392)
        moved = leader_log_start_offset > self.log.log_start_offset and \
            self.log.maybe_increment_log_start_offset(min(leader_log_start_offset, self.log.log_end_offset))
        if moved:
            self._delete_segments_below_log_start()

    def truncate_to(self, offset: int) -> None:
        """Cut the log at ``offset`` (a divergent tail after a leader change)
        and rebuild what depended on it."""
        if offset >= self.log.log_end_offset:
            return
        logger.info("%s-%d: truncating to %d (log end %d)", self.topic, self.index, offset,
                    self.log.log_end_offset)
        self._cut_log(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The leader's log starts after ours ends: start over empty there."""
        if self._syncer is not None:
            self._syncer.forget(self.log)
        self.log.truncate_fully_and_start_at(offset)
        if self.future_log is not None:
            self.future_log.truncate_fully_and_start_at(offset)
        self._producers.truncate()  # nothing before the new start is needed
        self._producers_loaded = True
        self.high_watermark = self._synced_offset = offset

    def _cut_log(self, offset: int) -> None:
        if self._syncer is not None:
            self._syncer.forget(self.log)  # no journal entry may outlive the cut
        self.log.truncate_to(offset)
        if self.future_log is not None and self.future_log.log_end_offset > offset:
            self.future_log.truncate_to(offset)  # the copy follows its source
        self._load_producer_state(
            end_offset=None if self._producers_loaded else self._replay_end_offset)
        self._synced_offset = min(self._synced_offset, self.log.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    # -- DeleteRecords (Kafka's deleteRecordsOnLeader, DelayedDeleteRecords) -------------
    def delete_records(self, offset: int) -> None:
        """Move the leader's log start offset to ``offset`` (the caller
        checked it against the HW), delete the segments wholly below it,
        and tell the fetch sessions: followers learn the new start from
        their next answer."""
        if self.log.maybe_increment_log_start_offset(offset):
            self._delete_segments_below_log_start()
            self.wake_waiters()
            self._wake_replica_waiters()

    def _delete_segments_below_log_start(self) -> None:
        try:
            self.log.delete_segments_below_log_start()
        except (LogError, OSError) as exc:  # the retention pass tries again
            logger.error("%s-%d: cannot delete segments below the log start offset: %s",
                         self.topic, self.index, exc)

    @property
    def low_watermark(self) -> int:
        return low_watermark(self.log.log_start_offset, self._followers.values(), self.is_live_broker)

    def wait_for_low_watermark(self, required_offset: int) -> asyncio.Future | None:
        """None when the low watermark is at ``required_offset`` already,
        else a future resolving to NONE once it is, or to
        NOT_LEADER_OR_FOLLOWER if the leadership moves first."""
        if self.low_watermark >= required_offset or not self.is_leader:
            return None
        self._lw_waiters.prune()
        return self._lw_waiters.add(required_offset)

    # -- leader side: followers, ISR, high watermark --------------------------------------
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int,
                                    log_start_offset: int = -1) -> int:
        """A follower fetched from ``fetch_offset`` with ``log_start_offset``:
        record its progress, let it into the ISR when it caught up, move the
        HW and the low watermark. Returns an error code for a replica that
        is not one of this partition's followers."""
        follower = self._followers.get(replica_id)
        if follower is None or not self.is_leader:
            # Kafka answers a fetch from a broker outside the assignment the
            # same way as one sent to a non-leader.
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        follower.update_fetch(fetch_offset, self.log.log_end_offset, monotonic_ms(self.clock),
                              log_start_offset)
        self._maybe_expand_isr(follower)
        self.maybe_increment_high_watermark()
        if len(self._lw_waiters):
            self._lw_waiters.complete_up_to(self.low_watermark, ErrorCode.NONE)
        return ErrorCode.NONE

    def is_follower(self, replica_id: int) -> bool:
        return replica_id in self._followers

    def follower_state(self, replica_id: int) -> FollowerState | None:
        """What this leader knows of follower ``replica_id`` (KIP-392 reads it)."""
        return self._followers.get(replica_id)

    def _maybe_expand_isr(self, follower: FollowerState) -> None:
        if follower.broker_id in self.isr or self._pending_isr is not None:
            return
        # Only a broker the metadata cache names as alive is eligible (Kafka's
        # isReplicaIsrEligible under ZooKeeper): the controller would refuse
        # any other with INELIGIBLE_REPLICA, and until it did, the pending
        # addition would hold the HW back on a replica that is gone.
        if (follower.log_end_offset >= self.high_watermark
                and follower.log_end_offset >= self.leader_epoch_start_offset
                and self.is_live_broker(follower.broker_id)):
            self._propose_isr(sorted(self.isr + [follower.broker_id]))

    def maybe_shrink_isr(self, now: int | None = None) -> None:
        """Drop followers not caught up for replica.lag.time.max.ms
        (``now``: the monotonic clock in ms)."""
        if not self.is_leader or self._pending_isr is not None or len(self.isr) <= 1:
            return
        now = monotonic_ms(self.clock) if now is None else now
        lagging = {replica for replica in self.isr if replica != self.broker_id
                   and replica in self._followers
                   and now - self._followers[replica].last_caught_up_ms > self.replica_lag_time_max_ms}
        if lagging:
            logger.info("%s-%d: replicas %s are out of sync", self.topic, self.index, sorted(lagging))
            self._propose_isr([replica for replica in self.isr if replica not in lagging])

    def _propose_isr(self, new_isr: list[int]) -> None:
        if self.isr_changes is None:
            return
        self._pending_isr = new_isr
        self.isr_changes(self, new_isr)
        self.maybe_increment_high_watermark()

    def _maximal_isr(self) -> list[int]:
        if self._pending_isr is None:
            return self.isr
        return sorted(set(self.isr) | set(self._pending_isr))

    def maybe_increment_high_watermark(self) -> None:
        """HW = the smallest log end offset over the (maximal) ISR."""
        if not self.is_leader:
            return
        new_hw = self._synced_offset
        for replica in self._maximal_isr():
            if replica == self.broker_id:
                continue
            follower = self._followers.get(replica)
            if follower is None:
                continue
            new_hw = min(new_hw, follower.log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            self.wake_waiters()
            self._hw_waiters.complete_up_to(new_hw, self.acks_all_error())

    # -- durability -------------------------------------------------------------------
    def _make_durable(self, syncer: GroupCommitSyncer | None, records: Buffer | None = None,
                      base_offset: int = -1) -> asyncio.Future | None:
        """Ask for the log to be synced up to its end; the future (None when
        nothing waits) resolves when it is, and the high watermark follows.
        ``records``: the batches just appended at ``base_offset``, which the
        syncer may journal instead of fsyncing the log's files."""
        target = self.log.log_end_offset
        if not self.durable or target <= self._synced_offset:
            return None
        if syncer is None:
            try:
                self.log.flush()
            except LogError as exc:
                self._report_storage_error(f"sync failed: {exc}")
                self._truncate_unsynced(exc)
                raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc
            self._advance_synced_offset(target)
            return None
        if self._syncer is not syncer:
            syncer.listen(self.log, self._on_sync_outcome)
            self._syncer = syncer
        # The waiter's future fails with a LogError (error_code 56) when the
        # sync does; cancelling it (the connection closed) stops nothing.
        return syncer.sync(self.log, target, records, base_offset)

    def _on_sync_outcome(self, synced_offset: int, error: BaseException | None) -> None:
        """Called by the syncer, before it answers any waiter."""
        if error is None:
            self._advance_synced_offset(synced_offset)
        elif isinstance(error, SyncFailedError):
            self._truncate_unsynced(error)

    def _advance_synced_offset(self, offset: int) -> None:
        self._synced_offset = max(self._synced_offset, min(offset, self.log.log_end_offset))
        self.maybe_increment_high_watermark()

    def _truncate_unsynced(self, cause: Exception) -> None:
        """After a failed fsync nothing past the high watermark is trusted
        (and none of it was acknowledged): cut it off and forget the
        producer state it carried, so retried batches are appended again."""
        if self.log.log_end_offset <= self.high_watermark:
            return
        logger.error("%s-%d: truncating unsynced offsets [%d, %d) after %s", self.topic,
                     self.index, self.high_watermark, self.log.log_end_offset, cause)
        try:
            self._cut_log(self.high_watermark)
        except (LogError, OSError) as exc:
            logger.error("%s-%d: truncation after a failed fsync failed: %s", self.topic,
                         self.index, exc)

    # -- waiters -----------------------------------------------------------------------
    def wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)
        if self.change_listener is not None:
            self.change_listener(self, False)

    def _wake_replica_waiters(self) -> None:
        if self._replica_waiters:
            waiters, self._replica_waiters = self._replica_waiters, []
            for future in waiters:
                if not future.done():
                    future.set_result(None)
        if self.change_listener is not None:
            self.change_listener(self, True)

    def data_waiter(self, for_replica: bool = False) -> asyncio.Future:
        """A future resolved when a consumer (HW moved) or, with
        ``for_replica``, a follower (the log grew) has something new."""
        future = asyncio.get_running_loop().create_future()
        self.add_data_waiter(future, for_replica)
        return future

    def add_data_waiter(self, future: asyncio.Future, for_replica: bool = False) -> None:
        """Resolve ``future`` (unless done) as ``data_waiter``'s would be;
        one future may wait on many partitions."""
        waiters = self._replica_waiters if for_replica else self._waiters
        # Timed-out fetches leave done futures behind; prune them so an
        # idle partition polled by long-poll consumers does not grow the list.
        if len(waiters) > 64:
            waiters[:] = [f for f in waiters if not f.done()]
        waiters.append(future)

    # -- fetch ---------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, read_committed: bool,
             min_one_message: bool) -> list:
        """File slices of whole batches from fetch_offset, below HW (or LSO)."""
        upper = self.last_stable_offset if read_committed else self.high_watermark
        log = self.log
        if fetch_offset == upper and log.log_start_offset <= fetch_offset:
            return []  # a consumer at the end (most partitions of a full fetch): nothing to read
        return self._read(fetch_offset, max_bytes, upper, min_one_message)

    def read_for_follower(self, fetch_offset: int, max_bytes: int,
                          min_one_message: bool = True) -> list:
        """Everything from fetch_offset up to the log end: followers copy
        what the HW does not cover yet. One segment's data at most, as
        Kafka reads: the follower appends an answer whole, and an append
        larger than segment.bytes is refused, so a follower further behind
        than that across segments could never catch up."""
        return self._read(fetch_offset, max_bytes, None, min_one_message)[:1]

    def _read(self, fetch_offset: int, max_bytes: int, upper: int | None,
              min_one_message: bool) -> list:
        if fetch_offset < self.log.log_start_offset or fetch_offset > self.log.log_end_offset:
            raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"offset {fetch_offset} is outside [{self.log.log_start_offset}, "
                                 f"{self.log.log_end_offset}]")
        if upper is not None and fetch_offset >= upper:
            return []
        try:
            return self.log.read(fetch_offset, max_bytes, max_offset=upper,
                                 min_one_message=min_one_message)
        except LogError as exc:
            if exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
                self._report_storage_error(str(exc))
            raise PartitionError(exc.error_code, str(exc)) from exc

    @property
    def last_stable_offset(self) -> int:
        """Below the HW and below the first offset of every transaction that
        is open, or ended by a marker the HW does not cover yet."""
        high_watermark = self.high_watermark
        unreplicated = self._unreplicated_txns
        while unreplicated and unreplicated[0][0] < high_watermark:
            unreplicated.popleft()
        unstable = self.producers.first_unstable_offset()
        if unreplicated:
            oldest = min(first for _, first in unreplicated)
            unstable = oldest if unstable is None else min(unstable, oldest)
        if unstable is None:
            return high_watermark
        # A transaction whose start DeleteRecords removed holds the LSO at the log start (Kafka).
        return min(high_watermark, max(unstable, self.log.log_start_offset))

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark_behind_epoch_start(self) -> bool:
        """A new leader whose HW has not yet reached what it had when it was
        elected: ListOffsets answers OFFSET_NOT_AVAILABLE meanwhile (KIP-207),
        so nobody sees the HW go back."""
        return self.high_watermark < self.leader_epoch_start_offset

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        """Error code for a request carrying the client's view of the
        leader epoch (KIP-320): -1 skips the check; older is fenced, newer
        means this broker has not caught up."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, from the leader
        epoch cache: the start of the next epoch, or the log end offset for
        the current one."""
        return self.log.end_offset_for_epoch(epoch)

    def replace_log(self, log: Log) -> None:
        """The replica moved to another log dir: ``log`` (the future log,
        which ends where the old one did, renamed into place) replaces it;
        offsets, batches and producer state are the same."""
        self.log = log
        self.future_log = None
        self._producers.directory = log.dir
        self._syncer = None  # the next durable append registers the new log

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        self.stop()
        self.snapshot_producer_state()
        self.log.close()

    def stop(self) -> None:
        """Stop serving (StopReplica, shutdown): answer every waiter."""
        self.wake_waiters()
        self._wake_replica_waiters()
        self._hw_waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._lw_waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def snapshot_producer_state(self, durable: bool = True) -> None:
        """Snapshot the producer state at the log end, unless nothing
        changed it since the last one (a state never loaded did not)."""
        producers = self._producers
        if self._producers_loaded and producers.snapshot_offset != self.log.log_end_offset:
            producers.write_snapshot(self.log.log_end_offset, durable)

    def _load_producer_state(self, snapshot_offsets: list[int] | None = None,
                             end_offset: int | None = None) -> None:
        """The newest snapshot, then the batch headers after it up to
        ``end_offset`` (the log end if None)."""
        self._producers_loaded = True
        start = max(self._producers.load_snapshot(self.log.log_end_offset, snapshot_offsets),
                    self.log.log_start_offset)
        self._unreplicated_txns = deque(entry for entry in self._unreplicated_txns
                                        if entry[0] < self.log.log_end_offset)
        self._update_producers_from(self.log.batch_headers(start, end_offset))

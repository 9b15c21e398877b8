"""One partition as its leader sees it: log, leader epoch, HW, ISR, producers.

Produce path per partition (ARCHITECTURE.md): native validation of the v2
batch (sizes, magic, CRC-32C, record count) -> size and codec checks ->
producer-state check (a retry of one of the last 5 batches gets its original
offset back) -> optional conversion to the topic's compression.type or
LogAppendTime -> Log.append (offsets patched in place) -> producer state ->
high watermark. On one node the ISR is this broker alone and the high
watermark follows the log end offset, or, with flush.messages=1, the
offset below which the log is on disk (group commit, log/durability.py):
an append then returns a future the produce handler awaits before it
acknowledges, and consumers see nothing that is not synced yet. A failed
fsync truncates the log back to the high watermark (nothing past it was
acknowledged) and reloads the producer state, so retries append afresh.

Not safe across await: every method runs to completion on the event loop.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from kcore._native import records as native_records
from kcore.log.cleaner_records import has_null_key
from kcore.log.durability import SyncFailedError
from kcore.log.errors import LogError
from kcore.log.producer_state import ProducerStateError, ProducerStateManager
from kcore.protocol import records as record_codec

logger = logging.getLogger(__name__)

# Kafka error codes raised from here.
CORRUPT_MESSAGE = 2
OFFSET_OUT_OF_RANGE = 1
MESSAGE_TOO_LARGE = 10
NOT_ENOUGH_REPLICAS = 19
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
MAX_TIMESTAMP = -3  # ListOffsets special timestamp (KIP-734)
UNKNOWN_LEADER_EPOCH = 75

CODEC_IDS = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# Byte offsets inside a v2 batch header (PROTOCOL.md section 2).
ATTRIBUTES_AT, CRC_AT, MAX_TIMESTAMP_AT = 21, 17, 35
# Replaying producer state reads the log in chunks of this size: large enough
# that a 1 MiB batch header walk needs few preads, small enough to not matter.
REPLAY_CHUNK = 4 * 1024 * 1024


class PartitionError(Exception):
    def __init__(self, error_code: int, message: str = ""):
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass
class ProduceResult:
    base_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False
    # flush.messages=1: resolves once the batch is on disk (group commit);
    # fails with PartitionError(KAFKA_STORAGE_ERROR) if the fsync fails.
    durable: asyncio.Future | None = None


class Partition:
    """Leader-side state of one topic partition (see module doc)."""

    def __init__(self, topic: str, index: int, log: Any, configs: dict[str, Any],
                 broker_id: int, producer_expiration_ms: int = 86_400_000):
        self.topic = topic
        self.index = index
        self.log = log
        self.configs = configs
        self.leader_id = broker_id
        self.leader_epoch = 0
        self.replicas = [broker_id]
        self.isr = [broker_id]
        self.producers = ProducerStateManager(log.dir, producer_expiration_ms)
        self._waiters: list[asyncio.Future] = []
        self._syncer: Any = None  # the group-commit syncer, once one was used
        self._load_producer_state()
        if self.durable:
            # Whatever a crash left in the page cache becomes durable before
            # the high watermark covers it.
            log.flush()
        self.high_watermark = log.log_end_offset

    @property
    def durable(self) -> bool:
        """flush.messages=1: acknowledge and expose only synced data."""
        return self.configs.get("flush.messages") == 1

    # -- produce ---------------------------------------------------------------
    def append_records_to_leader(self, records: memoryview, required_acks: int,
                                 syncer: Any = None) -> ProduceResult:
        """Append one produced batch. With flush.messages=1 and a group
        commit ``syncer`` the result's ``durable`` future says when it is
        on disk; without a syncer the log is fsynced here, before return."""
        batches = self._validate(records)
        if required_acks == -1 and len(self.isr) < self.configs["min.insync.replicas"]:
            raise PartitionError(NOT_ENOUGH_REPLICAS,
                                 f"ISR {self.isr} is smaller than min.insync.replicas="
                                 f"{self.configs['min.insync.replicas']}")
        (_, size, last_offset_delta, _, attributes, _, max_timestamp,
         producer_id, producer_epoch, base_sequence) = batches[0]
        if producer_id >= 0 and base_sequence >= 0:
            try:
                original = self.producers.check(producer_id, producer_epoch, base_sequence,
                                                last_offset_delta)
            except ProducerStateError as exc:
                self._validate(records, check_crc=True)  # corrupt bytes: CORRUPT_MESSAGE first
                raise PartitionError(exc.error_code, str(exc)) from None
            if original is not None:
                self._validate(records, check_crc=True)
                # The original may still wait for its fsync.
                return ProduceResult(original.first_offset, -1, self.log.log_start_offset, True,
                                     self._make_durable(syncer))
        converted = self._must_convert(attributes)
        if converted:
            # Conversion rewrites the CRC: check the producer's first.
            self._validate(records, check_crc=True)
        buffer, log_append_time = self._convert(records, attributes) if converted \
            else (records, -1)
        durable = self.durable
        try:
            # Unconverted bytes get their CRC checked by the log, on a second
            # core while they are written when the batch is large.
            info = self.log.append(buffer, self.leader_epoch, validate=not converted,
                                   defer_flush=durable)
        except LogError as exc:
            raise PartitionError(exc.error_code, str(exc)) from exc
        except OSError as exc:
            raise PartitionError(KAFKA_STORAGE_ERROR, f"append failed: {exc.strerror}") from exc
        if producer_id >= 0:
            self.producers.update(producer_id, producer_epoch, base_sequence, last_offset_delta,
                                  info.first_offset, max_timestamp,
                                  bool(attributes & TRANSACTIONAL_BIT))
        if not durable:
            self.maybe_advance_high_watermark()
            return ProduceResult(info.first_offset, log_append_time, self.log.log_start_offset)
        return ProduceResult(info.first_offset, log_append_time, self.log.log_start_offset,
                             durable=self._make_durable(syncer, buffer, info.first_offset))

    def _validate(self, records: memoryview, check_crc: bool = False) -> list[tuple]:
        """Header checks, and the CRC when ``check_crc`` or the records are
        about to be parsed here (compacted topics); otherwise the log checks
        the CRC as it appends."""
        check_crc = check_crc or self.log.config.compact
        try:
            batches = native_records.validate_batches(records, check_crc=check_crc)
        except native_records.CorruptBatchError as exc:
            raise PartitionError(CORRUPT_MESSAGE, f"corrupt record batch ({exc.reason})") from None
        if len(batches) != 1:
            raise PartitionError(INVALID_RECORD,
                                 f"produce v3+ needs exactly one record batch, got {len(batches)}")
        size, attributes = batches[0][1], batches[0][4]
        if size > self.configs["max.message.bytes"]:
            raise PartitionError(MESSAGE_TOO_LARGE,
                                 f"batch of {size} bytes exceeds max.message.bytes="
                                 f"{self.configs['max.message.bytes']}")
        if attributes & 0x07 > 4:
            raise PartitionError(UNSUPPORTED_COMPRESSION_TYPE,
                                 f"unknown compression codec {attributes & 0x07}")
        if attributes & CONTROL_BIT:
            raise PartitionError(INVALID_RECORD, "clients may not write control batches")
        if self.log.config.compact and has_null_key(records):
            raise PartitionError(INVALID_RECORD, "a compacted topic takes only records with a key")
        return batches

    def _must_convert(self, attributes: int) -> bool:
        wanted = self.configs["compression.type"]
        return (wanted != "producer" and CODEC_IDS[wanted] != attributes & 0x07) \
            or self.configs["message.timestamp.type"] == "LogAppendTime"

    def _convert(self, records: memoryview, attributes: int) -> tuple[Any, int]:
        """Recompress for the topic's compression.type and stamp
        LogAppendTime; both change CRC-covered bytes, so both recompute it.
        Returns the bytes to append and the LogAppendTime (-1 if CreateTime)."""
        buffer: Any = records
        wanted = self.configs["compression.type"]
        if wanted != "producer" and CODEC_IDS[wanted] != attributes & 0x07:
            buffer = record_codec.recompress_batch(bytes(records), CODEC_IDS[wanted])
        if self.configs["message.timestamp.type"] != "LogAppendTime":
            return buffer, -1
        now = int(time.time() * 1000)
        if not isinstance(buffer, bytearray):
            buffer = bytearray(buffer)
        new_attributes = int.from_bytes(buffer[ATTRIBUTES_AT:ATTRIBUTES_AT + 2], "big")
        buffer[ATTRIBUTES_AT:ATTRIBUTES_AT + 2] = (new_attributes | TIMESTAMP_TYPE_BIT).to_bytes(2, "big")
        buffer[MAX_TIMESTAMP_AT:MAX_TIMESTAMP_AT + 8] = now.to_bytes(8, "big", signed=True)
        crc = native_records.crc32c(bytes(buffer[ATTRIBUTES_AT:]))
        buffer[CRC_AT:CRC_AT + 4] = crc.to_bytes(4, "big")
        return buffer, now

    # -- durability -------------------------------------------------------------------
    def _make_durable(self, syncer: Any, records: Any = None,
                      base_offset: int = -1) -> asyncio.Future | None:
        """Ask for the log to be synced up to its end; the future (None when
        nothing waits) resolves when it is, and the high watermark follows.
        ``records``: the batches just appended at ``base_offset``, which the
        syncer may journal instead of fsyncing the log's files."""
        target = self.log.log_end_offset
        if not self.durable or target <= self.high_watermark:
            return None
        if syncer is None:
            try:
                self.log.flush()
            except LogError as exc:
                self._truncate_unsynced(exc)
                raise PartitionError(KAFKA_STORAGE_ERROR, str(exc)) from exc
            self._advance_high_watermark_to(target)
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
            self._advance_high_watermark_to(synced_offset)
        elif isinstance(error, SyncFailedError):
            self._truncate_unsynced(error)

    def _truncate_unsynced(self, cause: Exception) -> None:
        """After a failed fsync nothing past the high watermark is trusted
        (and none of it was acknowledged): cut it off and forget the
        producer state it carried, so retried batches are appended again."""
        if self.log.log_end_offset <= self.high_watermark:
            return
        logger.error("%s-%d: truncating unsynced offsets [%d, %d) after %s", self.topic,
                     self.index, self.high_watermark, self.log.log_end_offset, cause)
        try:
            if self._syncer is not None:
                self._syncer.forget(self.log)  # no journal entry may outlive the cut
            self.log.truncate_to(self.high_watermark)
            self._load_producer_state()
        except (LogError, OSError) as exc:
            logger.error("%s-%d: truncation after a failed fsync failed: %s", self.topic, self.index, exc)

    # -- high watermark and waiters ------------------------------------------------
    def maybe_advance_high_watermark(self) -> None:
        # One replica: everything appended is replicated. With flush.messages=1
        # the high watermark moves only when a sync completes
        # (_advance_high_watermark_to); a cluster would stop at the ISR's
        # minimum LEO.
        if not self.durable and self.log.log_end_offset != self.high_watermark:
            self.high_watermark = self.log.log_end_offset
            self.wake_waiters()

    def _advance_high_watermark_to(self, offset: int) -> None:
        new_hw = min(offset, self.log.log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            self.wake_waiters()

    def wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    def data_waiter(self) -> asyncio.Future:
        # Timed-out fetches leave cancelled futures behind; prune them so an
        # idle partition polled by long-poll consumers does not grow this list.
        if len(self._waiters) > 64:
            self._waiters = [f for f in self._waiters if not f.done()]
        future = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        return future

    # -- fetch ---------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, read_committed: bool,
             min_one_message: bool) -> list:
        """File slices of whole batches from fetch_offset, below HW (or LSO)."""
        upper = self.last_stable_offset if read_committed else self.high_watermark
        if fetch_offset < self.log.log_start_offset or fetch_offset > self.log.log_end_offset:
            raise PartitionError(OFFSET_OUT_OF_RANGE,
                                 f"offset {fetch_offset} is outside [{self.log.log_start_offset}, "
                                 f"{self.log.log_end_offset}]")
        if fetch_offset >= upper:
            return []
        try:
            return self.log.read(fetch_offset, max_bytes, max_offset=upper,
                                 min_one_message=min_one_message)
        except LogError as exc:
            raise PartitionError(exc.error_code, str(exc)) from exc

    @property
    def last_stable_offset(self) -> int:
        unstable = self.producers.first_unstable_offset()
        return self.high_watermark if unstable is None else min(self.high_watermark, unstable)

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """ListOffsets: -1 latest (HW), -2 earliest, -3 the record with the
        largest timestamp (KIP-734); else the first offset
        whose timestamp is >= timestamp, or (-1, -1) when none is."""
        if timestamp == -1:
            return -1, self.high_watermark
        if timestamp == -2:
            return -1, self.log.log_start_offset
        if timestamp == MAX_TIMESTAMP:
            found = self.log.offset_of_max_timestamp()
        else:
            found = self.log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= self.high_watermark:
            return -1, -1
        offset, found_timestamp = found
        return found_timestamp, offset

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        """Error code for a request carrying the client's view of the
        leader epoch (KIP-320): -1 skips the check; older is fenced, newer
        means this broker has not caught up."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return 0
        if current_leader_epoch < self.leader_epoch:
            return FENCED_LEADER_EPOCH
        return UNKNOWN_LEADER_EPOCH

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch. A partition that has
        only ever had one leader has a single epoch, ending at the log end."""
        if epoch == self.leader_epoch:
            return epoch, self.log.log_end_offset
        return -1, -1

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        self.wake_waiters()
        self.producers.write_snapshot(self.log.log_end_offset)
        self.log.close()

    def snapshot_producer_state(self) -> None:
        if self.producers.snapshot_offset != self.log.log_end_offset:
            self.producers.write_snapshot(self.log.log_end_offset)

    def _load_producer_state(self) -> None:
        start = max(self.producers.load_snapshot(self.log.log_end_offset),
                    self.log.log_start_offset)
        for header in iter_batch_headers(self.log, start):
            (base_offset, _, _, _, _, attributes, last_offset_delta, _, max_timestamp,
             producer_id, producer_epoch, base_sequence, _) = header
            if producer_id < 0:
                continue
            if attributes & CONTROL_BIT:
                self.producers.end_transaction(producer_id)
                continue
            self.producers.update(producer_id, producer_epoch, base_sequence, last_offset_delta,
                                  base_offset, max_timestamp, bool(attributes & TRANSACTIONAL_BIT))


def iter_batch_headers(log: Any, start_offset: int):
    """Batch headers from start_offset to the log end, read from the segment
    files with pread (headers only are parsed; records are skipped)."""
    offset = start_offset
    while offset < log.log_end_offset:
        slices = log.read(offset, REPLAY_CHUNK, min_one_message=True)
        if not slices:
            return
        for file_slice in slices:
            data = os.pread(file_slice.fd, file_slice.size, file_slice.position)
            position = 0
            while position + native_records.BATCH_HEADER_SIZE <= len(data):
                header = native_records.parse_batch_header(data, position)
                position += header[1] + 12
                offset = header[0] + header[6] + 1
                yield header

"""Acquiring records of a share-partition from its log (Kafka's
``SharePartition.acquire`` over a fetched slice of the log).

A read returns file slices of whole batches from the share-partition's
next fetch offset, below the high watermark (the last stable offset under
read_committed). Each batch's header (61 bytes: base offset, length,
attributes, last offset delta, producer id) is read from the file, never
its records: the batch goes back to the client whole, as in a Fetch, and
``acquired_records`` says which of its offsets this member holds. Control
batches and, under read_committed, batches of aborted transactions are
archived at once: they are never delivered.

Not thread-safe; the broker's event loop owns it.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kcore.coordinator.share.share_partition import AcquiredRange, SharePartition
from kcore.log.file_slice import FileSlice
from kcore.log.txn_index import AbortedTxn
from kcore.replication.partition import Partition

# RecordBatch v2 header (kcore/_native/batch_layout.py): base offset i64 at
# 0, batch length i32 at 8, attributes i16 at 21, last offset delta i32 at
# 23, producer id i64 at 43; 61 bytes before the records.
HEADER_SIZE = 61
_HEADER = struct.Struct(">qi9xhi16xq")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
BATCH_OVERHEAD = 12  # base offset and length precede the counted bytes


@dataclass(frozen=True, slots=True)
class BatchHeader:
    position: int
    size: int
    base_offset: int
    last_offset: int
    attributes: int
    producer_id: int


@dataclass
class Acquired:
    """What one partition gives one fetch: the batches to send and the
    offsets acquired in them."""
    slices: list[FileSlice]
    ranges: list[AcquiredRange]

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.ranges)

    @property
    def size(self) -> int:
        return sum(piece.size for piece in self.slices)


def batch_headers(piece: FileSlice) -> list[BatchHeader]:
    """The headers of the whole batches in one file slice."""
    headers = []
    position, end = piece.position, piece.position + piece.size
    while position + HEADER_SIZE <= end:
        data = os.pread(piece.fd, HEADER_SIZE, position)
        if len(data) < HEADER_SIZE:
            break
        base_offset, length, attributes, last_delta, producer_id = _HEADER.unpack_from(data)
        size = length + BATCH_OVERHEAD
        if size < HEADER_SIZE or position + size > end:
            break
        headers.append(BatchHeader(position, size, base_offset, base_offset + last_delta, attributes,
                                   producer_id))
        position += size
    return headers


def acquire_from_log(share: SharePartition, partition: Partition, member_id: str, deadline: float,
                     max_records: int, max_bytes: int, read_committed: bool,
                     record_limit: bool = False) -> Acquired:
    """Acquire up to ``max_records`` records for ``member_id`` from the
    share-partition's next fetch offset; the batches holding them are sent
    whole, the client keeps the acquired offsets. In the batch-optimized
    mode (ShareFetch v1, and v2's ShareAcquireMode 0) a batch once started
    is acquired whole, past ``max_records`` ("exceeded for alignment of
    batch boundaries"): a producer's batch of 10,000 records would
    otherwise go to the client 20 times for 500 records each. The
    record-limit mode (v2's ShareAcquireMode 1, KIP-1206) keeps the limit."""
    if share.start_offset < partition.log_start_offset:
        share.move_start_to(partition.log_start_offset)
    upper = partition.last_stable_offset if read_committed else partition.high_watermark
    fetch_offset = share.next_fetch_offset()
    if fetch_offset >= upper or max_records <= 0:
        return Acquired([], [])
    slices = partition.read(fetch_offset, max_bytes, read_committed, True)
    aborted = (partition.log.collect_aborted_txns(fetch_offset, upper)
               if read_committed and slices else [])
    result = Acquired([], [])
    room = max_records
    for piece in slices:
        for header in batch_headers(piece):
            if header.last_offset < fetch_offset or header.base_offset >= upper:
                continue
            if header.attributes & _CONTROL or (
                    header.attributes & _TRANSACTIONAL and _is_aborted(header, aborted)):
                share.archive(header.base_offset, header.last_offset)
                continue
            ranges = share.acquire(member_id, header.base_offset, min(header.last_offset, upper - 1),
                                   deadline, room, whole_batch=not record_limit)
            if ranges:
                _add_slice(result.slices, FileSlice(piece.fd, header.position, header.size))
                result.ranges.extend(ranges)
                room -= sum(r.last_offset - r.first_offset + 1 for r in ranges)
            if room <= 0 or share.is_full():
                return result
    return result


def _is_aborted(header: BatchHeader, aborted: list[AbortedTxn]) -> bool:
    return any(txn.producer_id == header.producer_id
               and txn.first_offset <= header.base_offset <= txn.last_offset for txn in aborted)


def _add_slice(slices: list[FileSlice], piece: FileSlice) -> None:
    """Batches next to each other in one file go as one slice."""
    last = slices[-1] if slices else None
    if last is not None and last.fd == piece.fd and last.position + last.size == piece.position:
        slices[-1] = FileSlice(last.fd, last.position, last.size + piece.size)
    else:
        slices.append(piece)

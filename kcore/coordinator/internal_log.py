"""Appends to, and replay of, the coordinators' internal topics
(``__consumer_offsets``, ``__transaction_state``).

Both coordinators keep their state as compacted records in a partition
they lead; both append with acks=all and answer once the in-sync replicas
have the batch, and both rebuild their state by reading the partition from
its log start to its log end when they become its leader.

Not thread-safe: the broker's event loop calls everything here.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

from kcore.log.durability import GroupCommitSyncer
from kcore.log.errors import LogError
from kcore.protocol import records as record_codec
from kcore.protocol.constants import ACKS_ALL
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition, PartitionError

# Replay reads this much log per read; Kafka's offsets.load.buffer.size and
# transaction.state.log.load.buffer.size are 5 MiB.
LOAD_CHUNK_BYTES = 4 * 1024 * 1024


# How a coordinator answers a failed append to its internal topic (Kafka's
# group coordinator appendGroupMetadataErrorToResponseError): errors a
# client can act on rather than the partition's own.
APPEND_ERRORS: dict[int, int] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


class StoreError(Exception):
    """An append to an internal topic failed with Kafka error `error_code`."""

    def __init__(self, error_code: int, message: str = ""):
        super().__init__(message)
        self.error_code = error_code


def append_replicated(partition: Partition, batch: bytes | bytearray,
                      syncer: GroupCommitSyncer | None, timeout_s: float) -> asyncio.Future | None:
    """Append one whole batch through ``partition``'s leader with acks=all.

    Returns a future that completes once the batch is durable (flush.messages=1
    with ``syncer``) and on every in-sync replica, failing with StoreError
    otherwise (REQUEST_TIMED_OUT after ``timeout_s``); None when both hold
    already. Raises StoreError when the append itself fails."""
    try:
        result = partition.append_records_to_leader(memoryview(batch), ACKS_ALL, syncer)
    except PartitionError as exc:
        raise StoreError(exc.error_code, exc.message) from None
    replicated = partition.wait_for_replicas(result.required_offset)
    if replicated is None and result.durable is None:
        code = partition.acks_all_error()
        if code != ErrorCode.NONE:
            raise StoreError(code, "the in-sync replicas are too few")
        return None
    return asyncio.ensure_future(_committed(result.durable, replicated, timeout_s))


async def _committed(durable: asyncio.Future | None, replicated: asyncio.Future | None,
                     timeout_s: float) -> None:
    """Durable first (a failed fsync is a storage error), then replicated."""
    if durable is not None:
        try:
            await durable
        except LogError as exc:
            raise StoreError(exc.error_code, str(exc) or "fsync failed") from exc
    if replicated is not None:
        try:
            code = await asyncio.wait_for(replicated, timeout_s)
        except TimeoutError:
            code = ErrorCode.REQUEST_TIMED_OUT
        if code != ErrorCode.NONE:
            raise StoreError(code, "the batch was not replicated")


def iter_log_batches(partition: Partition) -> Iterator[record_codec.RecordBatch]:
    """Every batch of a partition's log up to its log end offset: a new
    leader's log is the partition's truth, and what lies past its high
    watermark becomes committed as the followers copy it (Kafka loads to
    the log end too)."""
    offset = partition.log_start_offset
    while offset < partition.log_end_offset:
        slices = partition.read_for_follower(offset, LOAD_CHUNK_BYTES)
        if not slices:
            return
        start = offset
        for file_slice in slices:
            data = os.pread(file_slice.fd, file_slice.size, file_slice.position)
            for batch in record_codec.iter_batches(data):
                offset = max(offset, batch.next_offset)
                yield batch
        if offset == start:
            return

"""The transaction coordinator: InitProducerId with a transactional id,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, timeouts, and the markers
that finish each transaction (Kafka's TransactionCoordinator).

A transaction's life: InitProducerId bumps the id's epoch (fencing any
older producer with it) and leaves it Empty; AddPartitionsToTxn makes it
Ongoing with the partitions it writes; EndTxn writes PrepareCommit or
PrepareAbort and answers, then the markers go to every partition
(markers.py) and CompleteCommit / CompleteAbort is written. A coordinator
that takes over a partition finds Prepare* states in the log and finishes
them. An Ongoing transaction past its timeout, or open when its id calls
InitProducerId again, is aborted under a bumped epoch, so its producer is
fenced.

Errors, as Kafka: an id this broker does not coordinate NOT_COORDINATOR;
an unknown id, or a producer id that is not the id's,
INVALID_PRODUCER_ID_MAPPING; another epoch PRODUCER_FENCED (the handlers
turn it into INVALID_PRODUCER_EPOCH for versions that predate it); a
transition already in flight, or markers still on their way,
CONCURRENT_TRANSACTIONS (retriable); EndTxn that matches no transaction
INVALID_TXN_STATE.

Concurrency contract: the broker's event loop; each operation checks and
prepares before its first await (metadata.py's pending state keeps a
second operation out until the first is written).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kcore.clock import monotonic_ms, wall_ms
from kcore.coordinator.txn.manager import (
    TRANSACTION_STATE_TOPIC,
    CoordinatorError,
    TransactionStateManager,
)
from kcore.coordinator.txn.markers import MarkerSender, TxnMarker
from kcore.coordinator.txn.metadata import (
    LAST_FENCE_EPOCH,
    TransactionMetadata,
    is_epoch_exhausted,
)
from kcore.coordinator.txn.state import IllegalStateError, TransactionState
from kcore.metadata import TopicPartition
from kcore.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition

log = logging.getLogger(__name__)

NextProducerId = Callable[[], Coroutine[Any, Any, int]]
# Between attempts to write CompleteCommit/CompleteAbort while the ISR is short.
COMPLETE_RETRY_BACKOFF_S = 0.1

S = TransactionState


@dataclass(frozen=True)
class InitResult:
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    """Time comes from the manager's clock: the wall clock for what is
    written, the monotonic clock for timeouts (metadata.py)."""

    def __init__(self, manager: TransactionStateManager, next_producer_id: NextProducerId,
                 markers: MarkerSender):
        self.manager = manager
        self.next_producer_id = next_producer_id
        self.markers = markers
        self._tasks: set[asyncio.Task] = set()

    # -- lifecycle -----------------------------------------------------------------------
    def _now_ms(self) -> int:
        """The wall clock, for what is written."""
        return wall_ms(self.manager.clock)

    def start(self) -> None:
        config = self.manager.config
        self._spawn(self._every(config.abort_interval_ms / 1000, self.abort_timed_out))
        self._spawn(self._every(config.remove_expired_interval_ms / 1000, self.expire_ids))

    def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self.markers.close()

    def _spawn(self, coroutine: Coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _every(self, interval_s: float, action: Callable[[], int]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                action()
            except Exception:
                log.exception("transaction coordinator: %s failed", action.__name__)

    def on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        """Replica manager listener: load a __transaction_state partition
        this broker now leads (and finish its Prepare* transactions), drop
        one it no longer leads."""
        if partition.topic != TRANSACTION_STATE_TOPIC:
            return
        if not is_leader:
            self.manager.unload_partition(partition.index)
            return
        loaded = self.manager.load_partition(partition.index, partition.leader_epoch)
        for metadata in loaded.transactions.values():
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._spawn(self._complete(metadata.transactional_id, loaded.coordinator_epoch,
                                           metadata, metadata.state is S.PREPARE_COMMIT))

    # -- InitProducerId ------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                               expected_producer_id: int = NO_PRODUCER_ID,
                               expected_epoch: int = NO_PRODUCER_EPOCH) -> InitResult:
        if transactional_id is None:
            return InitResult(ErrorCode.NONE, await self.next_producer_id(), 0)
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.manager.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        expected = (expected_producer_id, expected_epoch) \
            if expected_producer_id != NO_PRODUCER_ID else None
        try:
            coordinator_epoch, metadata = self.manager.get(transactional_id)
            if metadata is None:
                producer_id = await self.next_producer_id()
                coordinator_epoch, metadata = self.manager.put_if_absent(TransactionMetadata(
                    transactional_id, producer_id, timeout_ms=timeout_ms,
                    last_update_ms=self._now_ms()))
        except CoordinatorError as exc:
            return InitResult(exc.error_code)
        prepared = await self._prepare_init(metadata, timeout_ms, expected)
        if isinstance(prepared, int):
            return InitResult(prepared)
        if prepared.state is S.PREPARE_EPOCH_FENCE:
            # Abort the open transaction under the bumped epoch; the client
            # retries and then gets an epoch of its own (never this one).
            code = await self._end_transaction(transactional_id, prepared.producer_id,
                                               prepared.producer_epoch, False, from_client=False)
            return InitResult(code if code != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS)
        code = await self.manager.append(transactional_id, coordinator_epoch, metadata, prepared)
        if code != ErrorCode.NONE:
            return InitResult(code)
        log.info("transactional id %r: producer id %d epoch %d", transactional_id,
                 prepared.producer_id, prepared.producer_epoch)
        return InitResult(ErrorCode.NONE, prepared.producer_id, prepared.producer_epoch)

    async def _prepare_init(self, metadata: TransactionMetadata, timeout_ms: int,
                            expected: tuple[int, int] | None):
        """The transit InitProducerId writes, or an error code."""
        if metadata.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not _valid_expected(metadata, *expected):
            return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state is S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return ErrorCode.INVALID_TXN_STATE
        if is_epoch_exhausted(metadata.producer_epoch) and (
                expected is None or expected[1] == metadata.producer_epoch):
            new_id = await self.next_producer_id()
            if metadata.pending_state is not None:  # another request came in meanwhile
                return ErrorCode.CONCURRENT_TRANSACTIONS
            return metadata.prepare_producer_id_rotation(new_id, timeout_ms, self._now_ms(),
                                                         expected is not None)
        transit = metadata.prepare_increment_producer_epoch(
            timeout_ms, self._now_ms(), None if expected is None else expected[1])
        return ErrorCode.PRODUCER_FENCED if transit is None else transit

    # -- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------
    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: set[TopicPartition]) -> int:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        try:
            coordinator_epoch, metadata = self.manager.get(transactional_id)
        except CoordinatorError as exc:
            return exc.error_code
        code = _check_producer(metadata, producer_id, producer_epoch)
        if code != ErrorCode.NONE or metadata is None:
            return code
        if metadata.pending or metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state is S.ONGOING and partitions <= metadata.partitions:
            return ErrorCode.NONE
        try:
            transit = metadata.prepare_add_partitions(partitions, self._now_ms(),
                                                      monotonic_ms(self.manager.clock))
        except IllegalStateError as exc:
            log.warning("%s", exc)
            return ErrorCode.INVALID_TXN_STATE
        return await self.manager.append(transactional_id, coordinator_epoch, metadata, transit)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn with verify_only (KIP-890 part 1, sent by a
        partition leader before it appends a transactional batch): per
        partition NONE when it is in the producer's ongoing transaction,
        else TRANSACTION_ABORTABLE; the whole set gets
        INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED or, while markers are
        on their way, CONCURRENT_TRANSACTIONS (Kafka's
        ``handleVerifyPartitionsInTransaction``). Changes nothing: the
        partitions of a transaction are those whose addition was written,
        and a pending transition is left to the append's own check."""
        if not transactional_id:
            return dict.fromkeys(partitions, ErrorCode.INVALID_REQUEST)
        try:
            _, metadata = self.manager.get(transactional_id)
        except CoordinatorError as exc:
            return dict.fromkeys(partitions, exc.error_code)
        code = _check_producer(metadata, producer_id, producer_epoch)
        if code == ErrorCode.NONE and metadata is not None \
                and metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        if code != ErrorCode.NONE or metadata is None:
            return dict.fromkeys(partitions, code)
        return {partition: ErrorCode.NONE if partition in metadata.partitions
                else ErrorCode.TRANSACTION_ABORTABLE for partition in partitions}

    # -- EndTxn --------------------------------------------------------------------------
    async def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              commit: bool) -> int:
        return await self._end_transaction(transactional_id, producer_id, producer_epoch, commit,
                                           from_client=True)

    async def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               commit: bool, from_client: bool) -> int:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        try:
            coordinator_epoch, metadata = self.manager.get(transactional_id)
        except CoordinatorError as exc:
            return exc.error_code
        if metadata is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        fencing = not from_client and metadata.pending_state is S.PREPARE_EPOCH_FENCE
        try:
            prepared = self._prepare_end(metadata, producer_id, producer_epoch, commit, from_client)
        finally:
            if fencing and metadata.pending_state is S.PREPARE_EPOCH_FENCE:
                metadata.abort_transition()  # refused: nothing of the fence stays pending
        if isinstance(prepared, int):
            return prepared
        code = await self.manager.append(transactional_id, coordinator_epoch, metadata, prepared)
        if code != ErrorCode.NONE:
            if fencing:
                metadata.has_failed_epoch_fence = True
            return code
        log.debug("transactional id %r: %s written", transactional_id, prepared.state.kafka_name)
        self._spawn(self._complete(transactional_id, coordinator_epoch, metadata, commit))
        return ErrorCode.NONE

    def _prepare_end(self, metadata: TransactionMetadata, producer_id: int, producer_epoch: int,
                     commit: bool, from_client: bool):
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # Clients must name the current epoch; a fence comes with the next one.
        if (from_client and producer_epoch != metadata.producer_epoch) \
                or producer_epoch < metadata.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending and metadata.pending_state is not S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = metadata.state
        if state is S.ONGOING:
            if not commit and metadata.pending_state is S.PREPARE_EPOCH_FENCE:
                # The fence's epoch becomes the transaction's, written with PrepareAbort.
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            return metadata.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                                    self._now_ms())
        done, in_flight = ((S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if commit
                           else (S.COMPLETE_ABORT, S.PREPARE_ABORT))
        if state is done:
            return ErrorCode.NONE  # a retry of an EndTxn that worked
        if state is in_flight:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        log.debug("%s: EndTxn(%s) in state %s", metadata.transactional_id,
                  "COMMIT" if commit else "ABORT", state.kafka_name)
        return ErrorCode.INVALID_TXN_STATE

    async def _complete(self, transactional_id: str, coordinator_epoch: int,
                        metadata: TransactionMetadata, commit: bool) -> None:
        """Markers to every partition, then CompleteCommit / CompleteAbort."""
        def is_current() -> bool:
            try:
                epoch, current = self.manager.get(transactional_id)
            except CoordinatorError:
                return False
            return epoch == coordinator_epoch and current is metadata

        marker = TxnMarker(metadata.producer_id, metadata.producer_epoch, coordinator_epoch, commit)
        delivered = await self.markers.deliver(marker, set(metadata.partitions), is_current,
                                               metadata.partitions.discard)
        while delivered and is_current():
            if metadata.pending or metadata.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                return
            code = await self.manager.append(transactional_id, coordinator_epoch, metadata,
                                             metadata.prepare_complete(self._now_ms()))
            if code == ErrorCode.NONE:
                return
            log.info("transactional id %r: writing %s failed (%s), retrying", transactional_id,
                     "CompleteCommit" if commit else "CompleteAbort", ErrorCode(code).name)
            await asyncio.sleep(COMPLETE_RETRY_BACKOFF_S)

    # -- timeouts and expiry -------------------------------------------------------------
    def abort_timed_out(self, monotonic_now_ms: int | None = None) -> int:
        """Abort every Ongoing transaction past its timeout (by the
        monotonic clock), fencing its producer: at epochs 32765 and 32766
        too (the fence takes the next one, and the producer's next
        InitProducerId rotates its id), or the transaction would stay open,
        and its partitions' LSO stuck."""
        if monotonic_now_ms is None:
            monotonic_now_ms = monotonic_ms(self.manager.clock)
        count = 0
        for metadata in self.manager.timed_out(monotonic_now_ms):
            if metadata.producer_epoch >= LAST_FENCE_EPOCH:
                continue  # never handed out, so never in a transaction
            transit = metadata.prepare_fence_producer_epoch()
            log.info("transactional id %r timed out after %d ms: aborting",
                     metadata.transactional_id, metadata.timeout_ms)
            self._spawn(self._end_transaction(metadata.transactional_id, transit.producer_id,
                                              transit.producer_epoch, False, from_client=False))
            count += 1
        return count

    def expire_ids(self, now: int | None = None) -> int:
        """Forget ids idle past transactional.id.expiration.ms (tombstones).
        Judged on the wall clock against the written last update, as in
        Kafka: the idle time spans coordinator moves and restarts, which
        only that timestamp has seen; a step of an hour moves a 7-day
        expiry by an hour."""
        now = self._now_ms() if now is None else now
        horizon = now - self.manager.config.id_expiration_ms
        count = 0
        for metadata in self.manager.all_transactions():
            if metadata.pending or metadata.last_update_ms > horizon or metadata.state not in (
                    S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                continue
            try:
                coordinator_epoch, _ = self.manager.get(metadata.transactional_id)
            except CoordinatorError:
                continue
            self._spawn(self.manager.append(metadata.transactional_id, coordinator_epoch,
                                            metadata, metadata.prepare_dead()))
            count += 1
        return count

    # -- DescribeTransactions / ListTransactions -----------------------------------------
    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        try:
            _, metadata = self.manager.get(transactional_id)
        except CoordinatorError as exc:
            return exc.error_code, None
        if metadata is None:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, metadata

    def list_transactions(self, states: set[str], producer_ids: set[int],
                          running_longer_than_ms: int = -1) -> list[TransactionMetadata]:
        """``running_longer_than_ms`` >= 0: only transactions started longer
        ago than that (ListTransactions v1), by the monotonic clock."""
        now = monotonic_ms(self.manager.clock)
        return [m for m in self.manager.all_transactions()
                if (not states or m.state.kafka_name in states)
                and (not producer_ids or m.producer_id in producer_ids)
                and (running_longer_than_ms < 0
                     or (m.start_ms >= 0 and now - m.start_monotonic_ms > running_longer_than_ms))]


def _valid_expected(metadata: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: a producer recovering from an error names the id and epoch
    it had; it may go on if they are the current ones (the epoch is checked
    later), the id was just created, or it is the previous id whose epochs
    ran out (a retry whose answer was lost)."""
    return (metadata.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == metadata.producer_id
            or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch)))


def _check_producer(metadata: TransactionMetadata | None, producer_id: int, epoch: int) -> int:
    if metadata is None or metadata.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if metadata.producer_epoch != epoch:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE

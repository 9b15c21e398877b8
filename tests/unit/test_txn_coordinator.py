"""The transaction coordinator's decisions (kcore/coordinator/txn/
coordinator.py) over the real TransactionStateManager, with its appends to
__transaction_state and its marker deliveries replaced by recorders: what
each request answers, what it writes, and which markers go out. Time is a
clock the tests move: timeouts follow its monotonic side, and a step of
its wall clock changes nothing."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from kcore.clock import monotonic_ms
from kcore.coordinator.txn import records as txn_records
from kcore.coordinator.txn.coordinator import TransactionCoordinator
from kcore.coordinator.txn.manager import (
    TRANSACTION_STATE_TOPIC,
    TransactionStateManager,
    TxnConfig,
    TxnPartition,
)
from kcore.coordinator.txn.markers import TxnMarker
from kcore.coordinator.txn.metadata import MAX_EPOCH, TransactionMetadata
from kcore.coordinator.txn.state import TransactionState
from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode as E
from tests.support.clock import HOUR_S, ManualClock
from tests.support.in_process import InProcessBroker

S = TransactionState
COORDINATOR_EPOCH = 5
TIMEOUT_MS = 60_000


class NoTopics:
    """The controller seam: __transaction_state's partition count is the config's."""

    def topic(self, name):
        return None


class RecordingManager(TransactionStateManager):
    """Appends succeed (or fail with ``fail_with``) without a log; each
    written value is kept, latest last."""

    def __init__(self, clock: ManualClock):
        super().__init__(NoTopics(), None, TxnConfig(num_partitions=1, max_timeout_ms=900_000), clock)
        self.owned[0] = TxnPartition(COORDINATOR_EPOCH)
        self.written: list[tuple[str, txn_records.TransactionValue | None]] = []
        self.fail_with: int | None = None

    async def _append_batch(self, index, batch):
        if self.fail_with is not None:
            return self.fail_with
        [parsed] = record_codec.iter_batches(bytes(batch))
        [record] = parsed.records()
        value = None if record.value is None else txn_records.decode_value(record.value)
        self.written.append((txn_records.decode_key(record.key), value))
        return E.NONE

    def states(self) -> list[str]:
        return [S.from_id(value.state_id).kafka_name if value else "tombstone" for _, value in self.written]


@dataclass
class RecordingMarkers:
    """Delivers every marker at once (or holds them while ``hold`` is set)."""
    sent: list[tuple[TxnMarker, frozenset]] = field(default_factory=list)
    hold: asyncio.Event | None = None

    async def deliver(self, marker, partitions, is_current, on_written):
        self.sent.append((marker, frozenset(partitions)))
        if self.hold is not None:
            await self.hold.wait()
        for partition in partitions:
            on_written(partition)
        return True

    def close(self):
        pass


class Harness:
    def __init__(self):
        self.clock = ManualClock()
        self.manager = RecordingManager(self.clock)
        self.markers = RecordingMarkers()
        self.next_id = 1000

        async def next_producer_id() -> int:
            self.next_id += 1
            return self.next_id

        self.coordinator = TransactionCoordinator(self.manager, next_producer_id, self.markers)

    def metadata(self, transactional_id: str = "t") -> TransactionMetadata:
        _, found = self.manager.get(transactional_id)
        assert found is not None
        return found

    async def settle(self) -> None:
        """Let spawned tasks (markers, Complete* writes) run."""
        for _ in range(10):
            await asyncio.sleep(0)


def run(test):
    """Run ``test(harness)`` on a fresh loop."""
    async def main():
        harness = Harness()
        try:
            await test(harness)
        finally:
            harness.coordinator.shutdown()
    asyncio.run(main())


async def begin(h: Harness, transactional_id: str = "t", partitions=(("out", 0),)) -> tuple[int, int]:
    result = await h.coordinator.init_producer_id(transactional_id, TIMEOUT_MS)
    assert result.error_code == E.NONE
    code = await h.coordinator.add_partitions(transactional_id, result.producer_id, result.producer_epoch,
                                              set(partitions))
    assert code == E.NONE
    return result.producer_id, result.producer_epoch


# -- InitProducerId ------------------------------------------------------------------------------
def test_init_gives_a_new_id_epoch_0_then_bumps_the_epoch():
    async def test(h):
        first = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        second = await h.coordinator.init_producer_id("t", 30_000)
        assert (first.error_code, first.producer_id, first.producer_epoch) == (E.NONE, 1001, 0)
        assert (second.error_code, second.producer_id, second.producer_epoch) == (E.NONE, 1001, 1)
        assert h.manager.states() == ["Empty", "Empty"]
        assert h.metadata().timeout_ms == 30_000
    run(test)


def test_idempotent_producers_get_a_fresh_id_without_state():
    async def test(h):
        result = await h.coordinator.init_producer_id(None, 0)
        assert (result.error_code, result.producer_epoch) == (E.NONE, 0)
        assert h.manager.written == []
    run(test)


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_init_with_a_timeout_out_of_range_writes_nothing(timeout_ms):
    async def test(h):
        result = await h.coordinator.init_producer_id("t", timeout_ms)
        assert result.error_code == E.INVALID_TRANSACTION_TIMEOUT
        assert h.manager.written == [] and h.manager.get("t") == (COORDINATOR_EPOCH, None)
    run(test)


def test_init_while_a_transaction_is_open_aborts_it_under_a_fenced_epoch():
    async def test(h):
        producer_id, epoch = await begin(h)
        result = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        assert result.error_code == E.CONCURRENT_TRANSACTIONS  # the client retries
        await h.settle()
        [(marker, partitions)] = h.markers.sent
        assert (marker.producer_id, marker.producer_epoch, marker.commit) == (producer_id, epoch + 1, False)
        assert marker.coordinator_epoch == COORDINATOR_EPOCH and partitions == {("out", 0)}
        assert h.manager.states()[-2:] == ["PrepareAbort", "CompleteAbort"]
        retried = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        assert (retried.error_code, retried.producer_epoch) == (E.NONE, epoch + 2)
        # The fenced producer can no longer end or extend a transaction.
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.PRODUCER_FENCED
        assert await h.coordinator.add_partitions("t", producer_id, epoch, {("out", 1)}) == E.PRODUCER_FENCED
    run(test)


def test_init_with_the_expected_producer_recovers_and_a_stale_one_is_fenced():
    async def test(h):
        first = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        bumped = await h.coordinator.init_producer_id("t", TIMEOUT_MS, first.producer_id, first.producer_epoch)
        assert bumped.producer_epoch == first.producer_epoch + 1
        # The answer was lost: the same request again gets the same epoch.
        again = await h.coordinator.init_producer_id("t", TIMEOUT_MS, first.producer_id, first.producer_epoch)
        assert (again.error_code, again.producer_epoch) == (E.NONE, bumped.producer_epoch)
        stale = await h.coordinator.init_producer_id("t", TIMEOUT_MS, first.producer_id, first.producer_epoch - 1)
        assert stale.error_code == E.PRODUCER_FENCED
        other = await h.coordinator.init_producer_id("t", TIMEOUT_MS, first.producer_id + 7, 0)
        assert other.error_code == E.PRODUCER_FENCED
    run(test)


def test_init_at_the_last_epoch_rotates_the_producer_id():
    async def test(h):
        first = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        h.metadata().producer_epoch = MAX_EPOCH
        rotated = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        assert (rotated.error_code, rotated.producer_epoch) == (E.NONE, 0)
        assert rotated.producer_id != first.producer_id
        assert h.metadata().last_producer_id == first.producer_id
    run(test)


def test_init_while_markers_are_on_their_way_is_concurrent_transactions():
    async def test(h):
        h.markers.hold = asyncio.Event()
        producer_id, epoch = await begin(h)
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.NONE
        await h.settle()
        assert (await h.coordinator.init_producer_id("t", TIMEOUT_MS)).error_code == E.CONCURRENT_TRANSACTIONS
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.CONCURRENT_TRANSACTIONS
        assert await h.coordinator.end_transaction("t", producer_id, epoch, False) == E.INVALID_TXN_STATE
        assert await h.coordinator.add_partitions("t", producer_id, epoch, {("x", 0)}) == \
            E.CONCURRENT_TRANSACTIONS
        h.markers.hold.set()
        await h.settle()
        assert h.metadata().state is S.COMPLETE_COMMIT
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.NONE
    run(test)


# -- EndTxn ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_writes_prepare_then_markers_then_complete(commit):
    async def test(h):
        producer_id, epoch = await begin(h, partitions=(("a", 0), ("b", 2)))
        assert await h.coordinator.end_transaction("t", producer_id, epoch, commit) == E.NONE
        await h.settle()
        word = "Commit" if commit else "Abort"
        assert h.manager.states() == ["Empty", "Ongoing", f"Prepare{word}", f"Complete{word}"]
        [(marker, partitions)] = h.markers.sent
        assert (marker.commit, partitions) == (commit, {("a", 0), ("b", 2)})
        assert h.manager.written[-1][1].partitions == frozenset()
    run(test)


def test_end_txn_without_a_transaction_is_invalid_txn_state():
    async def test(h):
        result = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        for commit in (True, False):
            assert await h.coordinator.end_transaction("t", result.producer_id, result.producer_epoch,
                                                       commit) == E.INVALID_TXN_STATE
        assert h.manager.states() == ["Empty"]
    run(test)


def test_end_txn_that_cannot_be_written_leaves_the_transaction_open():
    async def test(h):
        producer_id, epoch = await begin(h)
        h.manager.fail_with = E.NOT_COORDINATOR
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.NOT_COORDINATOR
        assert h.metadata().state is S.ONGOING and not h.metadata().pending
        h.manager.fail_with = None
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.NONE
    run(test)


# -- timeouts -------------------------------------------------------------------------------------
def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    async def test(h):
        producer_id, epoch = await begin(h)
        start = h.metadata().start_monotonic_ms
        assert h.coordinator.abort_timed_out(start + TIMEOUT_MS) == 0  # not past it yet
        assert h.coordinator.abort_timed_out(start + TIMEOUT_MS + 1) == 1
        await h.settle()
        [(marker, _)] = h.markers.sent
        assert (marker.producer_epoch, marker.commit) == (epoch + 1, False)
        assert h.metadata().state is S.COMPLETE_ABORT
        assert await h.coordinator.end_transaction("t", producer_id, epoch, True) == E.PRODUCER_FENCED
    run(test)


@pytest.mark.parametrize("epoch", [MAX_EPOCH - 1, MAX_EPOCH])
def test_a_timed_out_transaction_near_the_last_epoch_is_aborted_too(epoch):
    """Epochs 32765 and 32766 are handed to producers; fencing one of them
    takes the next epoch (at most 32767, never handed out), after which
    InitProducerId rotates the producer id. Skipping them would leave the
    transaction open, and the partitions' LSO stuck, for ever."""
    async def test(h):
        await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        h.metadata().producer_epoch = epoch
        producer_id = h.metadata().producer_id
        assert await h.coordinator.add_partitions("t", producer_id, epoch, {("out", 0)}) == E.NONE
        assert h.coordinator.abort_timed_out(h.metadata().start_monotonic_ms + TIMEOUT_MS + 1) == 1
        await h.settle()
        [(marker, _)] = h.markers.sent
        assert (marker.producer_epoch, marker.commit) == (epoch + 1, False)
        assert h.metadata().state is S.COMPLETE_ABORT
        rotated = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        if epoch + 1 >= MAX_EPOCH:
            assert (rotated.producer_epoch, rotated.producer_id != producer_id) == (0, True)
    run(test)


def test_a_failed_fence_is_retried_with_the_same_epoch():
    async def test(h):
        _, epoch = await begin(h)
        start = h.metadata().start_monotonic_ms
        h.manager.fail_with = E.COORDINATOR_NOT_AVAILABLE
        assert h.coordinator.abort_timed_out(start + TIMEOUT_MS + 1) == 1
        await h.settle()
        assert h.metadata().state is S.ONGOING and h.metadata().has_failed_epoch_fence
        h.manager.fail_with = None
        assert h.coordinator.abort_timed_out(start + TIMEOUT_MS + 1) == 1
        await h.settle()
        [(marker, _)] = h.markers.sent
        assert marker.producer_epoch == epoch + 1  # not epoch + 2
        assert h.metadata().state is S.COMPLETE_ABORT
    run(test)


@pytest.mark.parametrize("wall_step_s", [HOUR_S, -HOUR_S], ids=["forward-1h", "back-1h"])
def test_a_wall_clock_step_aborts_nothing_and_the_timeout_still_ends_it(wall_step_s):
    async def test(h):
        await begin(h)
        h.clock.step(wall_step_s)
        assert h.coordinator.abort_timed_out() == 0
        h.clock.advance(TIMEOUT_MS / 1000)
        assert h.coordinator.abort_timed_out() == 0  # at the timeout, not past it
        assert h.metadata().state is S.ONGOING and h.markers.sent == []
        h.clock.advance(0.001)
        assert h.coordinator.abort_timed_out() == 1
        await h.settle()
        assert [marker.commit for marker, _ in h.markers.sent] == [False]
        assert h.metadata().state is S.COMPLETE_ABORT
    run(test)


def test_listing_by_duration_counts_the_monotonic_time_since_the_start():
    """ListTransactions v1's duration filter: longer than the filter since
    the transaction started, the wall clock's steps not counted."""
    async def test(h):
        await begin(h)
        h.clock.advance(10.0)
        h.clock.step(HOUR_S)
        assert [m.transactional_id for m in h.coordinator.list_transactions(set(), set(), 5_000)] == ["t"]
        assert h.coordinator.list_transactions(set(), set(), 20_000) == []
        assert len(h.coordinator.list_transactions(set(), set())) == 1
    run(test)


def test_a_coordinator_taking_over_times_a_transaction_from_its_written_start(tmp_path):
    """A new coordinator loads an open transaction from __transaction_state
    (a real log): the 20 s since its written start count, then its own
    monotonic clock; a step of its wall clock after the load aborts nothing."""
    clock = ManualClock()
    broker = InProcessBroker(tmp_path, 1)
    broker.lead(TRANSACTION_STATE_TOPIC, 1)
    config = TxnConfig(num_partitions=1, replication_factor=1, min_isr=1)

    async def next_producer_id() -> int:
        return 7

    async def main():
        first = TransactionStateManager(NoTopics(), broker.replica_manager, config, clock)
        first.load_partition(0, 1)
        writer = TransactionCoordinator(first, next_producer_id, RecordingMarkers())
        started = await writer.init_producer_id("t", TIMEOUT_MS)
        assert await writer.add_partitions("t", started.producer_id, started.producer_epoch,
                                           {("out", 0)}) == E.NONE
        writer.shutdown()
        clock.advance(20.0)
        taking_over = TransactionStateManager(NoTopics(), broker.replica_manager, config, clock)
        [loaded] = taking_over.load_partition(0, 2).transactions.values()
        assert loaded.state is S.ONGOING
        assert loaded.start_monotonic_ms == monotonic_ms(clock) - 20_000
        coordinator = TransactionCoordinator(taking_over, next_producer_id, RecordingMarkers())
        try:
            clock.step(HOUR_S)
            assert coordinator.abort_timed_out() == 0
            clock.advance(TIMEOUT_MS / 1000 - 20.0)
            assert coordinator.abort_timed_out() == 0
            clock.advance(0.001)
            assert coordinator.abort_timed_out() == 1
        finally:
            coordinator.shutdown()

    try:
        asyncio.run(main())
    finally:
        broker.close()


# -- AddPartitionsToTxn ---------------------------------------------------------------------------
def test_add_partitions_already_in_the_transaction_writes_nothing():
    async def test(h):
        producer_id, epoch = await begin(h, partitions=(("a", 0), ("a", 1)))
        written = len(h.manager.written)
        assert await h.coordinator.add_partitions("t", producer_id, epoch, {("a", 1)}) == E.NONE
        assert len(h.manager.written) == written
        assert await h.coordinator.add_partitions("t", producer_id, epoch, {("b", 0)}) == E.NONE
        assert h.manager.written[-1][1].partitions == frozenset({("a", 0), ("a", 1), ("b", 0)})
    run(test)


def test_add_partitions_for_an_unknown_id_or_producer():
    async def test(h):
        assert await h.coordinator.add_partitions("nobody", 1, 0, {("a", 0)}) == E.INVALID_PRODUCER_ID_MAPPING
        result = await h.coordinator.init_producer_id("t", TIMEOUT_MS)
        assert await h.coordinator.add_partitions("t", result.producer_id + 1, result.producer_epoch,
                                                  {("a", 0)}) == E.INVALID_PRODUCER_ID_MAPPING
        assert await h.coordinator.add_partitions("t", result.producer_id, result.producer_epoch + 1,
                                                  {("a", 0)}) == E.PRODUCER_FENCED
        assert h.manager.states() == ["Empty"]
    run(test)


def test_requests_for_ids_of_partitions_not_led_here_are_not_coordinator():
    async def test(h):
        h.manager.unload_partition(0)
        assert (await h.coordinator.init_producer_id("t", TIMEOUT_MS)).error_code == E.NOT_COORDINATOR
        assert await h.coordinator.add_partitions("t", 1, 0, {("a", 0)}) == E.NOT_COORDINATOR
        assert await h.coordinator.end_transaction("t", 1, 0, True) == E.NOT_COORDINATOR
    run(test)


# -- AddPartitionsToTxn verify_only (KIP-890) ----------------------------------------------------
def test_verify_partitions_answers_by_the_ongoing_transaction_and_writes_nothing():
    async def test(h):
        producer_id, epoch = await begin(h, partitions=(("a", 0),))
        written = list(h.manager.written)
        asked = {("a", 0), ("a", 1)}
        assert h.coordinator.verify_partitions("t", producer_id, epoch, asked) == {
            ("a", 0): E.NONE, ("a", 1): E.TRANSACTION_ABORTABLE}
        assert h.coordinator.verify_partitions("t", producer_id, epoch + 1, asked) == \
            dict.fromkeys(asked, E.PRODUCER_FENCED)
        assert h.coordinator.verify_partitions("t", producer_id + 1, epoch, asked) == \
            dict.fromkeys(asked, E.INVALID_PRODUCER_ID_MAPPING)
        assert h.coordinator.verify_partitions("nobody", producer_id, epoch, asked) == \
            dict.fromkeys(asked, E.INVALID_PRODUCER_ID_MAPPING)
        assert h.coordinator.verify_partitions("", producer_id, epoch, asked) == \
            dict.fromkeys(asked, E.INVALID_REQUEST)
        assert h.manager.written == written
        _, metadata = h.manager.get("t")
        assert metadata.state is S.ONGOING and metadata.partitions == {("a", 0)}
    run(test)


def test_verify_partitions_while_markers_go_out_then_after_the_transaction_ended():
    async def test(h):
        producer_id, epoch = await begin(h, partitions=(("a", 0),))
        h.markers.hold = asyncio.Event()
        assert await h.coordinator.end_transaction("t", producer_id, epoch, False) == E.NONE
        await asyncio.sleep(0)
        assert h.coordinator.verify_partitions("t", producer_id, epoch, {("a", 0)}) == {
            ("a", 0): E.CONCURRENT_TRANSACTIONS}
        h.markers.hold.set()
        await h.settle()
        assert h.manager.states()[-1] == "CompleteAbort"
        # A write delayed past the abort: its partition is in no ongoing transaction.
        assert h.coordinator.verify_partitions("t", producer_id, epoch, {("a", 0)}) == {
            ("a", 0): E.TRANSACTION_ABORTABLE}
    run(test)


def test_verify_partitions_of_ids_not_coordinated_here_are_not_coordinator():
    async def test(h):
        h.manager.unload_partition(0)
        assert h.coordinator.verify_partitions("t", 1, 0, {("a", 0)}) == {("a", 0): E.NOT_COORDINATOR}
    run(test)


# -- expiry ---------------------------------------------------------------------------------------
def test_idle_finished_ids_expire_with_a_tombstone_and_open_ones_stay():
    async def test(h):
        await h.coordinator.init_producer_id("idle", TIMEOUT_MS)
        await begin(h, "busy")
        now = max(m.last_update_ms for m in h.manager.all_transactions())
        later = now + h.manager.config.id_expiration_ms + 1
        assert h.coordinator.expire_ids(later) == 1
        await h.settle()
        assert h.manager.written[-1] == ("idle", None)
        assert h.manager.get("idle") == (COORDINATOR_EPOCH, None)
        assert h.metadata("busy").state is S.ONGOING
    run(test)

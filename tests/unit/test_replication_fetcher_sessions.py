"""The follower fetcher keeps a fetch session with its leader: after one
full request it names only the partitions whose log end moved, and still
copies everything (leader in this process, through the real codecs)."""
from __future__ import annotations

import asyncio

import pytest

from kcore.client.fetch_session import FetchSessionHandler, FetchState
from kcore.metadata import PartitionState
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication.fetcher import FetcherConfig, LeaderFetcher
from tests.support.batches import make_batch
from tests.support.in_process import InProcessBroker

PARTITIONS = 40


def state(offset: int) -> FetchState:
    return FetchState(offset, 0, 1 << 20, 1)


def test_the_handler_sends_everything_first_then_only_changes():
    handler = FetchSessionHandler()
    first = handler.build({("t", 0): state(0), ("t", 1): state(0)})
    assert (first.session_id, first.session_epoch, len(first.to_send)) == (0, 0, 2)
    assert handler.handle_response(ErrorCode.NONE, 77)
    second = handler.build({("t", 0): state(5), ("t", 1): state(0), ("u", 0): state(0)})
    assert (second.session_id, second.session_epoch) == (77, 1)
    assert set(second.to_send) == {("t", 0), ("u", 0)} and second.forgotten == []
    assert handler.handle_response(ErrorCode.NONE, 77)
    third = handler.build({("t", 0): state(5)})
    assert third.session_epoch == 2 and third.to_send == {}
    assert sorted(third.forgotten) == [("t", 1), ("u", 0)]


@pytest.mark.parametrize("error", [ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                                   ErrorCode.INVALID_FETCH_SESSION_EPOCH])
def test_a_session_error_starts_over_with_a_full_request(error):
    handler = FetchSessionHandler()
    handler.build({("t", 0): state(0)})
    handler.handle_response(ErrorCode.NONE, 9)
    handler.build({("t", 0): state(3)})
    assert not handler.handle_response(error, 0)
    again = handler.build({("t", 0): state(3)})
    assert again.session_epoch == 0 and again.to_send == {("t", 0): state(3)}


def test_no_session_id_in_the_answer_keeps_requests_full():
    handler = FetchSessionHandler()
    handler.build({("t", 0): state(0)})
    handler.handle_response(ErrorCode.NONE, 0)
    assert handler.build({("t", 0): state(0)}).session_epoch == 0


def test_a_follower_copies_its_leader_naming_only_partitions_that_moved(tmp_path):
    leader = InProcessBroker(tmp_path, 1)
    follower = InProcessBroker(tmp_path, 2)
    states = [PartitionState("t", i, 1, 1, (1, 2), (1, 2), 1, 1) for i in range(PARTITIONS)]
    for broker in (leader, follower):
        broker.replica_manager.on_update_metadata(1, 1, [leader.info, follower.info], states)
        broker.replica_manager.on_leader_and_isr(1, 1, states, [leader.info])

    async def main():
        fetcher = LeaderFetcher(leader.info, FetcherConfig(2, max_wait_ms=50), lambda: None)

        async def connect():
            return leader
        fetcher._connect = connect  # type: ignore[method-assign]
        fetcher.add([follower.replica_manager.get("t", i) for i in range(PARTITIONS)])
        start = 0
        try:
            for round_number, indexes in enumerate([range(PARTITIONS), [3], [3, 17], [39]]):
                for index in indexes:
                    leader.replica_manager.get("t", index).append_records_to_leader(
                        memoryview(make_batch(2, value_bytes=20)), -1)
                await until_copied(leader, follower)
                # The fetch after the copy reports the new log ends; from then
                # on a round's fetches name only the partitions it moved.
                mark = await after_next_fetch(leader)
                if round_number:
                    assert names_since(leader, start) <= {("t", i) for i in indexes}, round_number
                start = mark
        finally:
            fetcher.stop()
            await fetcher.wait_stopped()

    try:
        asyncio.run(main())
        fetches = [r for r in leader.requests if r.api_key == ApiKey.FETCH]
        assert fetches[0].body.session_epoch == 0
        assert all(r.body.session_epoch > 0 for r in fetches[1:])
        for index in range(PARTITIONS):
            assert leader.replica_manager.get("t", index).isr == [1, 2]
    finally:
        leader.close()
        follower.close()


async def until_copied(leader: InProcessBroker, follower: InProcessBroker) -> None:
    for _ in range(200):
        if all(follower.replica_manager.get("t", i).log_end_offset
               == leader.replica_manager.get("t", i).log_end_offset for i in range(PARTITIONS)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the follower did not catch up")


async def after_next_fetch(leader: InProcessBroker) -> int:
    """Wait for one more request, then two more (the next fetch is sent
    after the answer to the current one); returns how many there were."""
    count = len(leader.requests)
    while len(leader.requests) < count + 2:
        await asyncio.sleep(0.01)
    return len(leader.requests)


def names_since(leader: InProcessBroker, start: int) -> set:
    fetches = [r for r in leader.requests[start:] if r.api_key == ApiKey.FETCH]
    return {(topic.topic, p.partition) for r in fetches for topic in r.body.topics
            for p in topic.partitions}

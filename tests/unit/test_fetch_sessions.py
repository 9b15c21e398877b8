"""Fetch sessions (KIP-227) on the broker, through the real codecs: an
incremental fetcher sees what a full, sessionless fetcher sees (the
oracle), idle partitions are not read, session errors and eviction follow
Kafka's rules."""
from __future__ import annotations

import asyncio
import random
import time

import pytest

from kcore._native import records as native_records
from kcore.clock import monotonic_ms
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication import fetch_session
from kcore.replication.fetch_session import EVICTION_MS, CachedPartition, FetchSessionCache
from kcore.replication.partition import Partition
from tests.support.batches import make_batch
from tests.support.clock import HOUR_S, SteppedClock
from tests.support.in_process import InProcessBroker

FETCH_VERSION = 11


def fetch_body(offsets: dict, session_id: int = 0, epoch: int = -1, forgotten=(),
               replica_id: int = -1, max_wait_ms: int = 0, max_bytes: int = 1 << 24) -> dict:
    topics: dict[str, list] = {}
    for (topic, index), offset in offsets.items():
        topics.setdefault(topic, []).append({"partition": index, "fetch_offset": offset,
                                             "log_start_offset": -1,
                                             "partition_max_bytes": 1 << 20})
    gone: dict[str, list] = {}
    for topic, index in forgotten:
        gone.setdefault(topic, []).append(index)
    return {"replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": max_bytes, "isolation_level": 0, "session_id": session_id,
            "session_epoch": epoch,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": p} for t, p in gone.items()]}


def fetch(broker: InProcessBroker, body: dict):
    return asyncio.run(broker.request(ApiKey.FETCH, body, FETCH_VERSION))


def answered(response) -> dict:
    return {(topic.topic, data.partition_index): data
            for topic in response.responses for data in topic.partitions}


def next_offset(data, offset: int) -> int:
    records = bytes(data.records or b"")
    infos = native_records.batch_infos(records) if records else []
    return infos[-1].last_offset + 1 if infos else offset


@pytest.fixture
def broker(tmp_path):
    opened: list[InProcessBroker] = []

    def start(partitions: int = 8, **options) -> InProcessBroker:
        instance = InProcessBroker(tmp_path / f"b{len(opened)}", 1, **options)
        instance.lead("t", partitions)
        opened.append(instance)
        return instance

    yield start
    for instance in opened:
        instance.close()


def produce(broker: InProcessBroker, index: int, records: int = 1) -> None:
    partition = broker.replica_manager.get("t", index)
    partition.append_records_to_leader(memoryview(make_batch(records, value_bytes=30)), 1)


def test_an_incremental_fetcher_sees_what_a_full_fetcher_sees(broker):
    """Each round a full fetcher without a session reads every partition;
    the session fetcher names only what changed and keeps the rest from
    earlier answers. Both must end each round with the same records and
    the same high watermark and log start of every partition."""
    leader = broker(12)
    keys = [("t", i) for i in range(12)]
    full_offsets = dict.fromkeys(keys, 0)
    session_offsets = dict.fromkeys(keys, 0)
    sent: dict = {}
    view: dict = {}
    session_id, epoch = 0, 0
    rng = random.Random(7)
    for round_number in range(40):
        for _ in range(rng.randint(0, 4)):
            produce(leader, rng.randrange(12), rng.randint(1, 3))
        full = answered(fetch(leader, fetch_body(full_offsets)))
        changed = {k: o for k, o in session_offsets.items() if sent.get(k) != o}
        response = fetch(leader, fetch_body(changed if epoch else session_offsets, session_id, epoch))
        assert response.error_code == ErrorCode.NONE
        if epoch == 0:
            session_id, epoch = response.session_id, 1
            assert session_id != 0
        else:
            epoch += 1
        sent.update(session_offsets)
        incremental = answered(response)
        for key in keys:
            if key in incremental:
                data = incremental[key]
                view[key] = (data.high_watermark, data.log_start_offset)
                assert bytes(data.records or b"") == bytes(full[key].records or b""), round_number
            else:
                assert not full[key].records, (round_number, key)
            assert view[key] == (full[key].high_watermark, full[key].log_start_offset)
            full_offsets[key] = next_offset(full[key], full_offsets[key])
            session_offsets[key] = next_offset(incremental.get(key, full[key]), session_offsets[key])


def test_idle_partitions_are_not_read_and_only_news_is_answered(broker, monkeypatch):
    leader = broker(500)
    offsets = {("t", i): 0 for i in range(500)}
    response = fetch(leader, fetch_body(offsets, epoch=0))
    session_id = response.session_id
    reads: list = []
    real_read = Partition.read
    monkeypatch.setattr(Partition, "read", lambda self, *a: reads.append(self.index) or real_read(self, *a))
    assert answered(fetch(leader, fetch_body({}, session_id, 1))) == {}
    assert reads == []
    for index in (3, 250, 499):
        produce(leader, index)
    news = answered(fetch(leader, fetch_body({}, session_id, 2)))
    assert sorted(news) == [("t", 3), ("t", 250), ("t", 499)]
    assert sorted(reads) == [3, 250, 499]


def test_a_parked_incremental_fetch_wakes_on_an_append(broker):
    leader = broker(4)
    session_id = fetch(leader, fetch_body({("t", i): 0 for i in range(4)}, epoch=0)).session_id

    async def main():
        asyncio.get_running_loop().call_later(0.2, produce, leader, 2)
        started = time.monotonic()
        response = await leader.request(ApiKey.FETCH, fetch_body({}, session_id, 1, max_wait_ms=10_000),
                                        FETCH_VERSION)
        return time.monotonic() - started, answered(response)

    waited, news = asyncio.run(main())
    assert list(news) == [("t", 2)] and 0.15 < waited < 5


def test_session_errors_closing_and_forgetting(broker):
    leader = broker(4)
    offsets = {("t", i): 0 for i in range(4)}
    session_id = fetch(leader, fetch_body(offsets, epoch=0)).session_id
    assert fetch(leader, fetch_body({}, session_id + 1, 1)).error_code == \
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert fetch(leader, fetch_body({}, session_id, 5)).error_code == \
        ErrorCode.INVALID_FETCH_SESSION_EPOCH
    forgot = fetch(leader, fetch_body({}, session_id, 1, forgotten=[("t", 0), ("t", 1)]))
    assert forgot.session_id == session_id
    produce(leader, 0)
    produce(leader, 2)
    assert list(answered(fetch(leader, fetch_body({}, session_id, 2)))) == [("t", 2)]
    closed = fetch(leader, fetch_body({("t", 3): 0}, session_id, -1))
    assert closed.session_id == 0 and leader.replica_manager.fetch_sessions.get(session_id) is None
    emptied = fetch(leader, fetch_body(offsets, epoch=0))
    last = fetch(leader, fetch_body({}, emptied.session_id, 1, forgotten=list(offsets)))
    assert last.session_id == 0 and not leader.replica_manager.fetch_sessions.sessions


def test_a_full_cache_answers_without_a_session(broker):
    leader = broker(2, session_slots=1)
    offsets = {("t", 0): 0, ("t", 1): 0}
    first = fetch(leader, fetch_body(offsets, epoch=0))
    second = fetch(leader, fetch_body(offsets, epoch=0))
    assert first.session_id != 0 and second.session_id == 0
    assert set(answered(second)) == set(offsets)


def sessions_of(cache: FetchSessionCache, specs) -> list:
    """specs: (replica_id, partitions, created_ms)."""
    made = []
    for replica_id, size, created_ms in specs:
        partitions = {("t", i): CachedPartition(0, 1) for i in range(size)}
        made.append(cache.create(replica_id, partitions, created_ms))
    return made


@pytest.mark.parametrize("newcomer, now_ms, evicted", [
    ((-1, 3), 1_000, None),              # consumers may not evict young sessions
    ((-1, 20), 1_000, None),
    ((-1, 3), EVICTION_MS + 5_000, None),   # old enough, but worth more than the newcomer
    ((-1, 20), EVICTION_MS + 5_000, 0),     # the least valuable old session goes
    ((2, 1), 1_000, 0),                  # a follower evicts a young consumer session
])
def test_eviction_follows_kafkas_rules(newcomer, now_ms, evicted):
    cache = FetchSessionCache(max_slots=3)
    existing = sessions_of(cache, [(-1, 5, 0), (-1, 10, 0), (3, 2, 0)])
    for session in existing:
        session.last_used_ms = now_ms - 1_000  # none is stale
    created = cache.create(newcomer[0], {("t", i): CachedPartition(0, 1) for i in range(newcomer[1])},
                           now_ms)
    assert (created is not None) == (evicted is not None)
    if evicted is not None:
        assert cache.get(existing[evicted].id) is None and cache.evictions == 1


def test_a_stale_session_is_evicted_by_anyone():
    cache = FetchSessionCache(max_slots=2)
    old, recent = sessions_of(cache, [(1, 50, 0), (-1, 50, 0)])
    recent.last_used_ms = EVICTION_MS
    assert cache.create(-1, {("t", 0): CachedPartition(0, 1)}, EVICTION_MS + 10) is not None
    assert cache.get(old.id) is None and cache.get(recent.id) is recent


def test_epochs_wrap_to_one():
    assert fetch_session.next_epoch(0) == 1
    assert fetch_session.next_epoch(2**31 - 1) == 1
    assert fetch_session.next_epoch(41) == 42


@pytest.mark.parametrize("wall_step_s", [0.0, -HOUR_S, HOUR_S], ids=["steady", "back-1h", "forward-1h"])
def test_a_follower_session_keeps_the_follower_caught_up_on_idle_partitions(tmp_path, wall_step_s):
    """The session tells the leader every lag / 8 (50 ms) that the follower
    is caught up on the partitions it does not read, on the monotonic
    clock: a wall clock stepped an hour back does not stop it."""
    clock = SteppedClock()
    leader = InProcessBroker(tmp_path, 1, lag_ms=400, clock=clock)
    try:
        leader.lead("t", 6, replicas=(1, 2))
        for index in range(6):
            produce(leader, index)
        offsets = {("t", i): 1 for i in range(6)}
        session_id = fetch(leader, fetch_body(offsets, epoch=0, replica_id=2)).session_id
        clock.step(wall_step_s)
        for epoch in range(1, 12):
            last_fetch_ms = monotonic_ms(clock)
            fetch(leader, fetch_body({}, session_id, epoch, replica_id=2, max_wait_ms=60))
        # An idle fetch waits its 60 ms, more than the touch interval: the
        # last one touched every partition.
        for index in range(6):
            follower = leader.replica_manager.get("t", index)._followers[2]
            assert follower.last_caught_up_ms >= last_fetch_ms
    finally:
        leader.close()

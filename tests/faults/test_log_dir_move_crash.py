"""A broker killed (SIGKILL) while a replica moves between its log dirs, or
just after, loses nothing: the move goes on after the restart (the future
log is found beside its source) and ends in the dir asked for; with
``flush.messages=1`` every acknowledged batch is there after a kill that
follows the swap. Real broker processes, the wire client."""
from __future__ import annotations

import pytest

from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode
from tests.support.log_dirs import alter, describe, log_dirs_setting, placement, wait_for_move
from tests.support.wire import WireClient, batch, create_topic, fetch, produce

VALUE = b"x" * 8192


def values(number: int) -> list[bytes]:
    return [b"%06d-%03d" % (number, i) + VALUE for i in range(64)]  # ~512 KiB a batch


def stored_values(client: WireClient, topic: str) -> list[bytes]:
    found: list[bytes] = []
    while True:
        answer = fetch(client, topic, len(found), max_bytes=8 << 20, partition_max_bytes=8 << 20)
        assert answer.error_code == ErrorCode.NONE
        records = [r for r in record_codec.iter_records(bytes(answer.records or b""))
                   if r.offset >= len(found)]
        if not records:
            return found
        found += [r.value for r in records]


def other_dir(client: WireClient, dirs, topic: str):
    return next(d for d in dirs if str(d) != placement(client)[(topic, 0, False)])


@pytest.mark.parametrize("durable", [False, True], ids=["page-cache", "flush-messages-1"])
def test_a_move_cut_by_a_kill_goes_on_after_the_restart(broker_factory, tmp_path, durable):
    dirs = [tmp_path / "a", tmp_path / "b"]
    overrides = {"log.dirs": log_dirs_setting(*dirs)}
    if durable:
        overrides["log.flush.interval.messages"] = "1"
    broker = broker_factory(overrides)
    client = WireClient(broker.port)
    create_topic(client, "cut")
    acknowledged: list[bytes] = []
    for number in range(160):  # ~80 MB: the copy takes many steps
        assert produce(client, "cut", batch(values(number)), acks=-1).error_code == ErrorCode.NONE
        acknowledged += values(number)
    target = other_dir(client, dirs, "cut")
    assert alter(client, {("cut", 0): str(target)}) == {("cut", 0): ErrorCode.NONE}
    moving = {(p.partition_index, p.is_future_key) for r in describe(client).results
              for t in r.topics for p in t.partitions}
    assert (0, True) in moving  # 80 MB take many steps: the kill comes before the swap
    broker.kill()
    broker.start()
    client = WireClient(broker.port)
    assert placement(client)[("cut", 0, False)] != str(target)  # the copy resumes
    wait_for_move(client, "cut", 0, target)
    assert stored_values(client, "cut") == acknowledged
    client.close()


def test_acknowledged_batches_survive_a_kill_right_after_a_durable_move(broker_factory, tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = broker_factory({"log.dirs": log_dirs_setting(*dirs),
                             "log.flush.interval.messages": "1"})
    client = WireClient(broker.port)
    create_topic(client, "durable")
    acknowledged: list[bytes] = []
    for number in range(20):
        assert produce(client, "durable", batch(values(number)), acks=-1).error_code == ErrorCode.NONE
        acknowledged += values(number)
    target = other_dir(client, dirs, "durable")
    assert alter(client, {("durable", 0): str(target)}) == {("durable", 0): ErrorCode.NONE}
    number = 20
    while placement(client).get(("durable", 0, False)) != str(target) or \
            ("durable", 0, True) in placement(client):
        assert produce(client, "durable", batch(values(number)), acks=-1).error_code == ErrorCode.NONE
        acknowledged += values(number)
        number += 1
        assert number < 2000, "the move did not end"
    for more in range(number, number + 5):
        assert produce(client, "durable", batch(values(more)), acks=-1).error_code == ErrorCode.NONE
        acknowledged += values(more)
    broker.kill()
    broker.start()
    client = WireClient(broker.port)
    assert placement(client)[("durable", 0, False)] == str(target)
    assert stored_values(client, "durable") == acknowledged
    client.close()

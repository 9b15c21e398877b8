"""Decompression bombs against a real broker: batches of a few KiB (zstd)
to a few hundred KiB (gzip, lz4) that inflate to 200 MiB-1 GiB of
well-formed records, produced with the raw wire client.

To a topic whose produce path reads the records (compacted: the key
check; compression.type other than the batch's: the recompression) the
answer is MESSAGE_TOO_LARGE within seconds, nothing is appended, the
connection keeps serving and the broker's peak RSS (VmHWM) grows by far
less than one bomb inflates to. A topic that keeps the producer's codec
appends the batch unread (as Kafka appends well-formed records); reading it
back on the broker (ListOffsets by timestamp, the console's browser) stays
bounded too."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.compression import CompressionType
from kcore.protocol.errors import ErrorCode
from kcore.protocol.records import Record, build_batch
from tests.support import BrokerProcess, free_port
from tests.support.bombs import MIB, bomb_batch
from tests.support.wire import WireClient, batch, create_topic, produce

BOMBS = [(CompressionType.GZIP, 256, False), (CompressionType.LZ4, 200, False),
         (CompressionType.ZSTD, 1024, False), (CompressionType.ZSTD, 1024, True)]
# An answer within this many seconds: decompressing to the 64 MiB limit
# takes ~0.1-0.5 s here; the bound leaves room for a shared machine.
ANSWER_S = 15.0
# The broker's peak RSS may grow by this much over all the bombs: one
# batch's limit (64 MiB) held twice while its pieces are joined, and the
# allocator's slack; a single 1 GiB bomb decoded whole needs > 1 GiB.
RSS_GROWTH_BOUND = 320 * MIB


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields


def log_end_offset(client: WireClient, topic: str, timestamp: int = -1) -> tuple[int, int]:
    """(error, offset) of ListOffsets at ``timestamp`` (-1: the latest)."""
    response = client.request(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                            "timestamp": timestamp}]}]})
    partition = response.topics[0].partitions[0]
    return partition.error_code, partition.offset


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    http_port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("bombs") / "data",
                            {"http.listeners": f"http://127.0.0.1:{http_port}"}).start()
    process.http_port = http_port  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def bombs():
    """Built once (gzip at level 9 takes a few seconds per 256 MiB)."""
    return {(codec, content_size): bomb_batch(codec, mib, content_size)
            for codec, mib, content_size in BOMBS}


@pytest.mark.parametrize("configs", [{"cleanup.policy": "compact"}, {"compression.type": "snappy"}],
                         ids=["compacted", "recompressed"])
def test_a_bomb_to_a_topic_that_reads_records_is_too_large_fast_and_memory_stays_bounded(
        broker, bombs, configs):
    topic = "bombed-" + "-".join(configs.values())
    client = WireClient(broker.port, timeout=60)
    create_topic(client, topic, configs=configs)
    before = memory(broker.process.pid)
    for (codec, content_size), data in bombs.items():
        assert len(data) < MIB
        started = time.monotonic()
        result = produce(client, topic, data)
        elapsed = time.monotonic() - started
        assert result.error_code == ErrorCode.MESSAGE_TOO_LARGE, (codec, content_size)
        assert elapsed < ANSWER_S, f"{CompressionType(codec).name}: answered after {elapsed:.1f} s"
    after = memory(broker.process.pid)
    growth = after["VmHWM"] - before["VmHWM"]
    assert growth < RSS_GROWTH_BOUND, f"peak RSS grew by {growth / MIB:.0f} MiB"
    # Nothing was appended; the same connection serves the next produce.
    assert log_end_offset(client, topic) == (ErrorCode.NONE, 0)
    keyed = build_batch([Record(key=b"k", value=b"after", timestamp=1_700_000_000_000)])
    assert produce(client, topic, keyed).error_code == ErrorCode.NONE
    assert log_end_offset(client, topic) == (ErrorCode.NONE, 1)
    client.close()


def test_a_bomb_kept_as_produced_reads_back_bounded(broker, bombs):
    """compression.type=producer on a delete topic: the batch is appended
    without being read, as Kafka appends well-formed records; the broker's
    own readers stop at the limit."""
    client = WireClient(broker.port, timeout=60)
    create_topic(client, "kept")
    before = memory(broker.process.pid)
    result = produce(client, "kept", bombs[(CompressionType.ZSTD, False)])
    assert result.error_code == ErrorCode.NONE and result.base_offset == 0
    # ListOffsets by timestamp would read the records: it answers the
    # batch's first offset, where a consumer misses nothing.
    assert log_end_offset(client, "kept", 1_000) == (ErrorCode.NONE, 0)
    # The console's browser answers, with the reason, instead of decoding 1 GiB.
    url = (f"http://127.0.0.1:{broker.http_port}/api/topics/kept/partitions/0/messages"
           f"?offset=0&limit=5")
    started = time.monotonic()
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(url, timeout=60)
    assert time.monotonic() - started < ANSWER_S
    body = json.loads(answer.value.read())
    assert answer.value.code == 500 and "inflate past" in body["message"]
    growth = memory(broker.process.pid)["VmHWM"] - before["VmHWM"]
    assert growth < RSS_GROWTH_BOUND, f"peak RSS grew by {growth / MIB:.0f} MiB"
    assert produce(client, "kept", batch([b"next"])).error_code == ErrorCode.NONE
    client.close()

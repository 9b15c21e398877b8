"""One log dir of a broker fails (its tmpfs fills up, or is unmounted
under it) and goes offline alone, as in Kafka: the partitions it held
answer KAFKA_STORAGE_ERROR to Produce, Fetch and ListOffsets,
DescribeLogDirs shows the dir with KAFKA_STORAGE_ERROR, and the broker
keeps serving the partitions of its other dir, acknowledged data intact.
Real broker processes; tmpfs mounts need root (skipped without)."""
from __future__ import annotations

import subprocess
import time

from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.log_dirs import describe, log_dirs_setting, placement
from tests.support.tmpfs import mounted_tmpfs
from tests.support.wire import WireClient, batch, create_topic, fetch_body, produce

# The flush timer, which also checks that each log dir is still the one locked.
FAST_CHECKS = {"log.flush.offset.checkpoint.interval.ms": "300"}
VALUE = b"v" * 4096


def values(number: int) -> list[bytes]:
    return [b"%06d-%02d" % (number, i) + VALUE for i in range(16)]


def fetch_partition(client: WireClient, topic: str, partition: int, offset: int = 0):
    body = fetch_body(topic, partition, offset)
    return client.request(ApiKey.FETCH, 11, body).responses[0].partitions[0]


def list_offset(client: WireClient, topic: str, partition: int) -> int:
    answer = client.request(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return answer.topics[0].partitions[0].error_code


def stored(client: WireClient, topic: str, partition: int) -> list[bytes]:
    found: list[bytes] = []
    while True:
        answer = fetch_partition(client, topic, partition, len(found))
        assert answer.error_code == ErrorCode.NONE
        records = [r for r in record_codec.iter_records(bytes(answer.records or b""))
                   if r.offset >= len(found)]
        if not records:
            return found
        found += [r.value for r in records]


def split_topic(client: WireClient, disk, volume) -> tuple[int, int]:
    """A topic with a partition in each dir: (the one on disk, the one on the volume)."""
    create_topic(client, "split", partitions=2)
    where = placement(client)
    on = {where[("split", p, False)]: p for p in range(2)}
    return on[str(disk)], on[str(volume)]


def wait_offline(client: WireClient, volume, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        codes = {r.log_dir: r.error_code for r in describe(client).results}
        if codes[str(volume)] == ErrorCode.KAFKA_STORAGE_ERROR:
            return
        assert time.monotonic() < deadline, f"{volume} still online: {codes}"
        time.sleep(0.1)


def check_offline_alone(client: WireClient, kept: int, lost: int, disk, volume,
                        acknowledged: list[bytes]) -> None:
    answer = describe(client)
    by_dir = {r.log_dir: r for r in answer.results}
    assert (by_dir[str(volume)].error_code, by_dir[str(volume)].topics) == (
        ErrorCode.KAFKA_STORAGE_ERROR, [])
    assert by_dir[str(volume)].total_bytes == -1
    assert by_dir[str(disk)].error_code == ErrorCode.NONE
    assert produce(client, "split", batch(values(0)), partition=lost).error_code == \
        ErrorCode.KAFKA_STORAGE_ERROR
    assert fetch_partition(client, "split", lost).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert list_offset(client, "split", lost) == ErrorCode.KAFKA_STORAGE_ERROR
    more = values(999)
    assert produce(client, "split", batch(more), partition=kept, acks=-1).error_code == ErrorCode.NONE
    assert stored(client, "split", kept) == acknowledged + more
    assert list_offset(client, "split", kept) == ErrorCode.NONE


def test_a_filled_log_dir_goes_offline_and_the_other_serves(broker_factory, tmp_path):
    disk = tmp_path / "disk"
    with mounted_tmpfs(tmp_path / "volume", "4m") as volume:
        broker = broker_factory({"log.dirs": log_dirs_setting(disk, volume), **FAST_CHECKS})
        client = WireClient(broker.port)
        kept, lost = split_topic(client, disk, volume)
        acknowledged: list[bytes] = []
        for number in range(3):
            assert produce(client, "split", batch(values(number)), partition=kept,
                           acks=-1).error_code == ErrorCode.NONE
            acknowledged += values(number)
        codes = [produce(client, "split", batch(values(n)), partition=lost, acks=-1).error_code
                 for n in range(200)]  # 64 KiB each: the 4 MiB fill up
        assert ErrorCode.KAFKA_STORAGE_ERROR in codes and codes[0] == ErrorCode.NONE
        wait_offline(client, volume)
        check_offline_alone(client, kept, lost, disk, volume, acknowledged)
        assert "is offline: " in broker.log() and "No space left on device" in broker.log()
        client.close()


def test_an_unmounted_log_dir_goes_offline_and_the_other_serves(broker_factory, tmp_path):
    disk = tmp_path / "disk"
    with mounted_tmpfs(tmp_path / "volume", "4m") as volume:
        broker = broker_factory({"log.dirs": log_dirs_setting(disk, volume), **FAST_CHECKS})
        client = WireClient(broker.port)
        kept, lost = split_topic(client, disk, volume)
        acknowledged = values(1)
        for partition in (kept, lost):
            assert produce(client, "split", batch(acknowledged), partition=partition,
                           acks=-1).error_code == ErrorCode.NONE
        subprocess.run(["umount", "-l", str(volume)], check=True)
        wait_offline(client, volume)
        check_offline_alone(client, kept, lost, disk, volume, acknowledged)
        assert "the directory was removed or unmounted" in broker.log()
        client.close()
        broker.restart()  # the stop was clean, the other dir's partitions intact
        client = WireClient(broker.port)
        assert stored(client, "split", kept) == acknowledged + values(999)
        client.close()

"""A broker whose data dir is a full 8 MiB tmpfs: produce answers
KAFKA_STORAGE_ERROR (56), fetching what is stored keeps working, nothing
acknowledged is lost (also across a SIGKILL), and producing resumes at the
next offset once space returns. In fsync (group commit) and page-cache
modes."""
from __future__ import annotations

import pytest

from kcore.protocol import records as record_codec
from kcore.protocol.errors import ErrorCode
from tests.support import BrokerProcess
from tests.support.tmpfs import fill, mounted_tmpfs
from tests.support.wire import WireClient, batch, create_topic, fetch, produce

MODES = {"fsync": {"log.flush.interval.messages": "1"}, "page-cache": {}}
VALUES_PER_BATCH = 16
VALUE_BYTES = 4096  # 64 KiB batches
LEFT_FREE = 1 << 20  # room for ~15 batches once the filler is written


def values_for(number: int) -> list[bytes]:
    return [b"%06d-%02d-" % (number, i) + bytes([number % 251]) * VALUE_BYTES
            for i in range(VALUES_PER_BATCH)]


def stored_values(client: WireClient, topic: str) -> list[bytes]:
    values: list[bytes] = []
    offset = 0
    while True:
        partition = fetch(client, topic, offset)
        assert partition.error_code == ErrorCode.NONE
        records = list(record_codec.iter_records(bytes(partition.records or b"")))
        if not records:
            return values
        values += [record.value for record in records if record.offset >= offset]
        offset = records[-1].offset + 1


@pytest.mark.parametrize("mode", list(MODES))
def test_full_disk_answers_storage_error_keeps_reads_and_resumes(tmp_path, mode):
    with mounted_tmpfs(tmp_path / "fs", "8m") as data_dir:
        broker = BrokerProcess(data_dir, MODES[mode]).start()
        try:
            client = WireClient(broker.port)
            create_topic(client, "t", configs={"segment.bytes": str(64 << 20)})
            filler = fill(data_dir, LEFT_FREE)
            acknowledged: list[bytes] = []
            number = 0
            for number in range(200):
                result = produce(client, "t", batch(values_for(number)), acks=-1)
                if result.error_code != ErrorCode.NONE:
                    break
                assert result.base_offset == len(acknowledged)
                acknowledged += values_for(number)
            assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert 0 < len(acknowledged) < 200 * VALUES_PER_BATCH
            again = produce(client, "t", batch(values_for(number)), acks=-1)
            assert again.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert stored_values(client, "t") == acknowledged
            assert fetch(client, "t", 0).high_watermark == len(acknowledged)

            filler.unlink()
            resumed = produce(client, "t", batch(values_for(number)), acks=-1)
            assert (resumed.error_code, resumed.base_offset) == (ErrorCode.NONE, len(acknowledged))
            acknowledged += values_for(number)
            assert stored_values(client, "t") == acknowledged
            client.close()

            broker.restart(clean=False)
            client = WireClient(broker.port)
            assert stored_values(client, "t") == acknowledged
            client.close()
            assert "No space left on device" in broker.log()
        finally:
            broker.kill()

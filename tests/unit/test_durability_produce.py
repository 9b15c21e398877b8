"""The produce handler with flush.messages=1: it answers only after the
group-commit fsync, and answers KAFKA_STORAGE_ERROR (56) when that fsync
fails in the kernel; the retry is then appended afresh. Real handler,
partition, log and syncer; the broker is reduced to the three attributes the
handler reads."""
from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

from kcore import protocol
from kcore.config import BrokerConfig
from kcore.controller.local import LocalController
from kcore.handlers import produce
from kcore.log.durability import GroupCommitSyncer
from kcore.log.manager import LogManager
from kcore.log.sync_backends import IoUringBackend
from kcore.metrics import BrokerStats
from kcore.protocol.api_keys import ApiKey
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.txn_verifier import TransactionVerifier
from kcore.security.quotas import ClientQuotas
from tests.support.batches import make_batch
from tests.support.wire import produce_body


def produce_request(sequence: int):
    records = bytes(make_batch(3, producer_id=11, producer_epoch=0, base_sequence=sequence))
    frame = protocol.encode_request(ApiKey.PRODUCE, 7, sequence, "test",
                                    produce_body("t", 0, records, acks=-1))
    return protocol.decode_request(memoryview(bytearray(frame[4:])))


def partition_response(response: dict) -> dict:
    return response["responses"][0]["partition_responses"][0]


def test_fsync_failure_answers_storage_error_and_the_retry_is_appended_again(tmp_path):
    async def main():
        loop = asyncio.get_running_loop()
        defaults = BrokerConfig({"log.flush.interval.messages": "1"}).topic_defaults()
        log_manager = LogManager([tmp_path], defaults)
        replicas = ReplicaManager(0, log_manager, defaults, 86_400_000)
        controller = LocalController(tmp_path, 0, replicas)
        await controller.start()
        await controller.create_topic("t", 1, 1, {})
        syncer = GroupCommitSyncer(IoUringBackend(loop), loop)
        # No transactions here: the produce path without their verification.
        verifier = TransactionVerifier(0, replicas.metadata_cache, lambda _: ("__transaction_state", 0),
                                       lambda *_: {}, enabled=False)
        broker = SimpleNamespace(replica_manager=replicas, log_syncer=syncer, stats=BrokerStats(),
                                 authorizer=None, quotas=ClientQuotas(), txn_verifier=verifier)
        partition = replicas.get("t", 0)

        first = partition_response(await produce.handle(broker, None, produce_request(0)))
        assert (first["error_code"], first["base_offset"]) == (0, 0)
        assert partition.high_watermark == 3

        pending = loop.create_task(produce.handle(broker, None, produce_request(3)))
        await asyncio.sleep(0)  # the handler appended and awaits its fsync round
        assert partition.log.log_end_offset == 6 and not pending.done()
        segment = partition.log.active_segment
        real_fd = segment.fd
        read_end, write_end = os.pipe()
        segment.fd = write_end  # the round about to start fdatasyncs a pipe: EINVAL
        try:
            await asyncio.sleep(0)
        finally:
            segment.fd = real_fd
            os.close(read_end)
            os.close(write_end)
        failed = partition_response(await pending)
        assert (failed["error_code"], failed["base_offset"]) == (56, -1)
        assert "Invalid argument" in failed["error_message"]
        assert partition.log.log_end_offset == 3 == partition.high_watermark

        retried = partition_response(await produce.handle(broker, None, produce_request(3)))
        assert (retried["error_code"], retried["base_offset"]) == (0, 3)
        assert partition.high_watermark == 6
        await syncer.close()
        replicas.shutdown()
        log_manager.shutdown()
    asyncio.run(asyncio.wait_for(main(), 30))

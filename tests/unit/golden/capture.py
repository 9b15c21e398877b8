"""Captures request frames from the real clients into golden files.

A tiny in-memory broker (one node, one topic ``golden`` with one partition,
built on kcore.protocol) serves confluent-kafka (librdkafka), kafka-python
and aiokafka while each produces one message, consumes it back and deletes
it with its admin client's DeleteRecords. The
first request frame of every (api key, version) a client sends is stored,
without its size prefix, as ``<api>_request_v<N>_<client>.bin`` next to this
file. test_protocol_captured.py decodes every file and re-encodes it.

Regenerate (about 20 s; the files are committed):

    .venv/bin/python -m tests.unit.golden.capture
"""
from __future__ import annotations

import asyncio
import struct
import threading
import time
from pathlib import Path

from kcore.protocol import (
    ApiKey,
    ProtocolError,
    UnsupportedVersionError,
    api_versions_body,
    api_versions_error_response,
    decode_request,
    encode_response,
)

GOLDEN_DIR = Path(__file__).parent
TOPIC = "golden"
CLIENT_NAMES = ("librdkafka", "kafka-python", "aiokafka")


class MiniBroker:
    """Single-partition broker state and per-api answers. Used from one event loop thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.batches: list[bytes] = []
        self.end_offset = 0
        self.client = "unknown"
        self.saved: set[tuple[str, int, int]] = set()

    def save(self, frame: bytes, api_key: int, version: int) -> None:
        key = (self.client, api_key, version)
        if key in self.saved:
            return
        self.saved.add(key)
        name = f"{ApiKey(api_key).name.lower()}_request_v{version}_{self.client}.bin"
        (GOLDEN_DIR / name).write_bytes(frame)

    def answer(self, request) -> object | None:
        handler = getattr(self, f"on_{ApiKey(request.api_key).name.lower()}", None)
        if handler is None:
            raise ProtocolError(f"capture broker does not serve {ApiKey(request.api_key).name}")
        return handler(request.body)

    def on_api_versions(self, body) -> dict:
        return api_versions_body()

    def on_metadata(self, body) -> dict:
        partition = {"partition_index": 0, "leader_id": 0, "leader_epoch": -1, "replica_nodes": [0],
                     "isr_nodes": [0]}
        return {"brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port}], "cluster_id": "golden",
                "controller_id": 0, "topics": [{"name": TOPIC, "partitions": [partition]}]}

    def on_find_coordinator(self, body) -> dict:
        return {"node_id": 0, "host": "127.0.0.1", "port": self.port}

    def on_init_producer_id(self, body) -> dict:
        return {"producer_id": 4242, "producer_epoch": 0}

    def on_offset_fetch(self, body) -> dict:
        return {"topics": [{"name": topic.name, "partitions": [
            {"partition_index": index, "committed_offset": -1, "metadata": ""}
            for index in topic.partition_indexes]} for topic in body.topics or []]}

    def on_produce(self, body) -> dict | None:
        responses = []
        for topic in body.topic_data:
            results = []
            for partition in topic.partition_data:
                batch = bytearray(partition.records)
                base_offset = self.end_offset
                struct.pack_into(">q", batch, 0, base_offset)
                self.end_offset += struct.unpack_from(">i", batch, 23)[0] + 1
                self.batches.append(bytes(batch))
                results.append({"index": partition.index, "base_offset": base_offset})
            responses.append({"name": topic.name, "partition_responses": results})
        return None if body.acks == 0 else {"responses": responses}

    def on_list_offsets(self, body) -> dict:
        return {"topics": [{"name": topic.name, "partitions": [
            {"partition_index": p.partition_index, "timestamp": -1,
             "offset": 0 if p.timestamp == -2 else self.end_offset} for p in topic.partitions]}
            for topic in body.topics]}

    def on_fetch(self, body) -> dict:
        topics = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                records = b"".join(batch for batch in self.batches
                                   if struct.unpack_from(">q", batch)[0] >= p.fetch_offset)
                partitions.append({"partition_index": p.partition, "high_watermark": self.end_offset,
                                   "last_stable_offset": self.end_offset, "log_start_offset": 0,
                                   "records": records})
            topics.append({"topic": topic.topic, "partitions": partitions})
        return {"responses": topics}

    def on_delete_records(self, body) -> dict:
        return {"topics": [{"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "low_watermark": self.end_offset if p.offset == -1 else p.offset}
            for p in topic.partitions]} for topic in body.topics]}


async def serve_connection(broker: MiniBroker, reader, writer) -> None:
    try:
        while True:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
            try:
                request = decode_request(frame)
            except UnsupportedVersionError as exc:
                broker.save(frame, exc.header.api_key, exc.header.api_version)
                if exc.header.api_key != ApiKey.API_VERSIONS:
                    break
                writer.write(b"".join(api_versions_error_response(exc.header)))
                continue
            broker.save(frame, request.api_key, request.api_version)
            if request.api_key == ApiKey.FETCH and not broker.batches:
                await asyncio.sleep(min(request.body.max_wait_ms, 200) / 1000)
            body = broker.answer(request)
            if body is not None:
                writer.write(b"".join(bytes(chunk) for chunk in encode_response(request.header, body)))
    except (asyncio.IncompleteReadError, ConnectionError, ProtocolError):
        pass
    finally:
        writer.close()


def start_broker() -> MiniBroker:
    ready = threading.Event()
    holder: dict = {}

    def run() -> None:
        loop = asyncio.new_event_loop()

        async def main() -> None:
            server = await asyncio.start_server(lambda r, w: serve_connection(holder["broker"], r, w),
                                                "127.0.0.1", 0)
            holder["broker"] = MiniBroker(server.sockets[0].getsockname()[1])
            ready.set()
            await asyncio.Event().wait()

        loop.run_until_complete(main())

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return holder["broker"]


def run_librdkafka(bootstrap: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "compression.type": "zstd", "linger.ms": 5})
    producer.produce(TOPIC, b"value", key=b"key", partition=0, headers=[("h", b"v")])
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "golden-group",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            break
    consumer.close()
    delete_librdkafka(bootstrap)


def delete_librdkafka(bootstrap: str) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(TOPIC, 0, 1)], request_timeout=15).values():
        future.result()


def run_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    producer.send(TOPIC, b"value", key=b"key", partition=0, headers=[("h", b"v")]).get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(TOPIC, 0)])
    consumer.seek_to_beginning()
    consumer.poll(timeout_ms=5000)
    consumer.close()
    delete_kafka_python(bootstrap)


def delete_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_records({TopicPartition(TOPIC, 0): 1}, timeout_ms=15000)
    admin.close()


def run_aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def scenario() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        await producer.send_and_wait(TOPIC, b"value", key=b"key", partition=0, headers=[("h", b"v")])
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        consumer.assign([TopicPartition(TOPIC, 0)])
        await consumer.seek_to_beginning()
        await consumer.getmany(timeout_ms=5000)
        await consumer.stop()

    asyncio.run(scenario())
    delete_aiokafka(bootstrap)


def delete_aiokafka(bootstrap: str) -> None:
    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        await admin.delete_records({TopicPartition(TOPIC, 0): RecordsToDelete(1)}, timeout_ms=15000)
        await admin.close()

    asyncio.run(scenario())


def main() -> None:
    for stale in GOLDEN_DIR.glob("*_request_v*_*.bin"):
        stale.unlink()
    runs = {"librdkafka": run_librdkafka, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}
    for client, run in runs.items():
        broker = start_broker()
        broker.client = client
        run(f"127.0.0.1:{broker.port}")
        print(client, sorted((ApiKey(key).name, version) for name, key, version in broker.saved))


if __name__ == "__main__":
    main()

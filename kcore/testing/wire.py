"""A blocking, one-request-at-a-time Kafka connection for tests that need
to send exact frames (bad input, raw protocol checks)."""
from __future__ import annotations

import socket
import struct

from kcore import protocol
from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.protocol.primitives import ZERO_UUID


class WireClient:
    def __init__(self, port: int, timeout: float = 10.0, client_id: str = "kcore-tests"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.correlation_id = 0
        self.client_id = client_id

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response frame without its size, or None on EOF."""
        header = self._read_exact(4)
        if header is None:
            return None
        size, = struct.unpack(">i", header)
        return self._read_exact(size)

    def _read_exact(self, count: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    def request(self, api_key: int, api_version: int, body: dict):
        self.correlation_id += 1
        self.send_raw(protocol.encode_request(api_key, api_version, self.correlation_id,
                                              self.client_id, body))
        frame = self.read_frame()
        if frame is None:
            return None
        correlation_id, response = protocol.decode_response(api_key, api_version, frame)
        assert correlation_id == self.correlation_id
        return response

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def produce_body(topic: str, partition: int, records: bytes, acks: int = 1) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def fetch_body(topic: str, partition: int, offset: int, max_wait_ms: int = 0,
               max_bytes: int = 1 << 20) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                         "log_start_offset": -1,
                                                         "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def batch(values, **kwargs) -> bytearray:
    return record_codec.build_batch(
        [record_codec.Record(value=v, key=None, headers=[], timestamp=1_700_000_000_000 + i)
         for i, v in enumerate(values)], **kwargs)


def produce(client, topic, data, partition=0, acks=1):
    response = client.request(ApiKey.PRODUCE, 7, produce_body(topic, partition, bytes(data), acks))
    result = response.responses[0].partition_responses[0]
    return result


def create_topic(client, name, partitions=1, configs=None):
    response = client.request(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
        "timeout_ms": 5000, "validate_only": False})
    assert response.topics[0].error_code == ErrorCode.NONE, response.topics[0].error_message


def topic_id_of(client, name):
    """The topic's id (KIP-516), as Metadata v12 answers it."""
    response = client.request(ApiKey.METADATA, 12, {
        "topics": [{"topic_id": ZERO_UUID, "name": name}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    topic = response.topics[0]
    assert topic.error_code == ErrorCode.NONE, topic.error_code
    return topic.topic_id


def fetch(client, topic, offset, max_bytes=1 << 20, max_wait_ms=0, partition_max_bytes=1 << 20):
    body = fetch_body(topic, 0, offset, max_wait_ms)
    body["max_bytes"] = max_bytes
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = partition_max_bytes
    return client.request(ApiKey.FETCH, 11, body).responses[0].partitions[0]

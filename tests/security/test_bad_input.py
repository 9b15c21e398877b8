"""Bad input on a SASL listener, byte by byte over a raw socket: malformed
tokens, a replayed SCRAM exchange, an oversized frame, requests out of
turn. Each gets Kafka's error code or a closed connection; the broker goes
on serving another connection. A refusal is answered late
(connection.failed.authentication.delay.ms) while a connection already
authenticated is not slowed."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from kcore import protocol
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.scram import ScramClient
from tests.support.cli import kcore_cli
from tests.support.secure_broker import SCRAM_PASSWORD, SCRAM_USER, start_secure_broker

DELAY_MS = 400


@pytest.fixture(scope="module")
def broker(tmp_path_factory, pki):
    started = start_secure_broker(tmp_path_factory.mktemp("bad-input") / "data", pki,
                                  {"connection.failed.authentication.delay.ms": str(DELAY_MS)})
    added = kcore_cli("users", "add", SCRAM_USER, "--password", SCRAM_PASSWORD,
                      "--bootstrap-server", started.address("PLAINTEXT"))
    assert added.returncode == 0, added.stderr
    yield started
    started.process.kill()


class Raw:
    """A Kafka connection with nothing hidden: frames in, frames out."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, body) -> object:
        self.correlation_id += 1
        self.sock.sendall(protocol.encode_request(api_key, version, self.correlation_id, "raw", body))
        correlation_id, response = protocol.decode_response(api_key, version, self.read_frame())
        assert correlation_id == self.correlation_id
        return response

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def read_frame(self) -> bytes:
        size, = struct.unpack(">i", self._read(4))
        return self._read(size)

    def _read(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def closed(self) -> bool:
        """True once the broker has closed (end of stream within 10 s)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def authenticate_plain(raw: Raw, user: str, password: str):
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    return raw.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})


def still_serves(broker) -> None:
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    try:
        assert authenticate_plain(raw, "alice", "alice-secret").error_code == 0
        metadata = raw.call(ApiKey.METADATA, 1, {"topics": []})
        assert [b.port for b in metadata.brokers] == [broker.ports["SASL_PLAINTEXT"]]
    finally:
        raw.close()


@pytest.mark.parametrize("token", [b"", b"no separators", b"\0\0", b"\0alice\0wrong",
                                   b"x" * 4096, b"\0alice\0\xff\xfe"])
def test_malformed_or_wrong_plain_token_fails_and_closes(broker, token):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    answer = raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and answer.error_message
    assert raw.closed()
    still_serves(broker)


@pytest.mark.parametrize("token", [b"\xff\xfe", b"n,,", b"p=tls-server-end-point,,n=a,r=b",
                                   b"n,,n=scram-user", b"y,a=other,n=scram-user,r=abc"])
def test_malformed_scram_first_message_fails_and_closes(broker, token):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == 0
    answer = raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert raw.closed()
    still_serves(broker)


def test_replayed_scram_exchange_is_refused(broker):
    recorded = []
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    client = ScramClient("SCRAM-SHA-256", SCRAM_USER, SCRAM_PASSWORD)
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == 0
    recorded.append(client.first())
    server_first = raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": recorded[0]}).auth_bytes
    recorded.append(client.final(server_first))
    final = raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": recorded[1]})
    assert final.error_code == 0
    client.verify(final.auth_bytes)
    raw.close()
    replay = Raw(broker.ports["SASL_PLAINTEXT"])
    assert replay.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == 0
    assert replay.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": recorded[0]}).error_code == 0
    answer = replay.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": recorded[1]})
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "nonce" in answer.error_message
    assert replay.closed()
    still_serves(broker)


def test_oversized_frame_before_authentication_closes(broker):
    """sasl.server.max.receive.size (512 KiB) bounds frames before
    authentication; the same size is fine once authenticated."""
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    raw.sock.sendall(struct.pack(">i", 600_000) + b"\0" * 1024)
    assert raw.closed()
    still_serves(broker)


@pytest.mark.parametrize("api_key, version, body", [
    (ApiKey.METADATA, 1, {"topics": []}),
    (ApiKey.PRODUCE, 3, {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": []}),
    (ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"}),
])
def test_request_out_of_turn_before_authentication_closes(broker, api_key, version, body):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    raw.sock.sendall(protocol.encode_request(api_key, version, 1, "raw", body))
    assert raw.closed()
    still_serves(broker)


def test_api_versions_is_served_before_authentication(broker):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    versions = raw.call(ApiKey.API_VERSIONS, 0, {})
    keys = {entry.api_key: (entry.min_version, entry.max_version) for entry in versions.api_keys}
    assert keys[ApiKey.SASL_HANDSHAKE] == (0, 1) and keys[ApiKey.SASL_AUTHENTICATE] == (0, 2)
    assert authenticate_plain(raw, "admin", "admin-secret").error_code == 0
    raw.close()


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes(broker):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    answer = raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert raw.closed()


def test_handshake_on_a_listener_without_sasl_is_illegal_state(broker):
    raw = Raw(broker.ports["PLAINTEXT"])
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert raw.call(ApiKey.METADATA, 1, {"topics": []}).brokers  # still usable
    raw.close()


def test_second_handshake_after_authentication_is_illegal_state(broker):
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert authenticate_plain(raw, "alice", "alice-secret").error_code == 0
    assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE
    raw.close()


def test_handshake_v0_exchanges_bare_tokens(broker):
    """kafka-python with SaslHandshake v0: the token travels without a
    request header and is answered by a bare (here empty) token."""
    raw = Raw(broker.ports["SASL_PLAINTEXT"])
    assert raw.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
    raw.send_frame(b"\0alice\0alice-secret")
    assert raw.read_frame() == b""
    assert raw.call(ApiKey.METADATA, 1, {"topics": []}).brokers
    raw.close()
    wrong = Raw(broker.ports["SASL_PLAINTEXT"])
    assert wrong.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
    wrong.send_frame(b"\0alice\0wrong")
    assert wrong.closed()


def test_refusal_is_delayed_and_other_connections_do_not_notice(broker):
    """While a refusal waits out its delay, the broker goes on answering an
    authenticated connection: Metadata answers keep arriving inside every
    wait. Judged by order (answers inside each wait), not by a latency
    bound, which a loaded machine could break; a broker that slept on its
    loop for the delay would answer nothing inside it."""
    settled = Raw(broker.ports["SASL_PLAINTEXT"])
    assert authenticate_plain(settled, "alice", "alice-secret").error_code == 0
    answered_at: list[float] = []
    stop = threading.Event()

    def keep_asking() -> None:
        while not stop.is_set() and len(answered_at) < 500:
            settled.call(ApiKey.METADATA, 1, {"topics": []})
            answered_at.append(time.monotonic())
            time.sleep(0.02)

    asking = threading.Thread(target=keep_asking)
    asking.start()
    try:
        windows = []
        for _ in range(3):
            raw = Raw(broker.ports["SASL_PLAINTEXT"])
            started = time.monotonic()
            assert authenticate_plain(raw, "alice", "wrong").error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            windows.append((started, time.monotonic()))
            assert raw.closed()
    finally:
        stop.set()
        asking.join(10)
    waits = [end - start for start, end in windows]
    # Each answer waits the delay; each next attempt from the address first
    # waits the delay doubled per failure: 1, 1+1, 1+2 delays.
    assert [wait >= factor * DELAY_MS / 1000 * 0.9 for wait, factor in zip(waits, (1, 2, 3))] == [True] * 3, waits
    # At most one answer can be in flight when a wait begins; 0.4 s and more
    # hold ~20 answers a wait when the loop is free.
    inside = [sum(start < at < end for at in answered_at) for start, end in windows]
    assert min(inside) >= 3, inside
    still_serves(broker)  # a success clears the address's record

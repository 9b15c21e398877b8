"""TLS listeners: real clients with and without client certificates, the
certificate subject as principal, fetches larger than one copy piece, the
kcore CLI through --command-config, and the wrong protocol on either kind
of port getting a closed connection within seconds, never a hang."""
from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time

import pytest
from confluent_kafka import KafkaError, Producer

from kcore.config import BrokerConfig
from kcore.server.security import server_ssl_context, tls_principal
from tests.support.cli import kcore_cli
from tests.support.compat import unique_topic
from tests.support.secure_broker import CLIENT_PRINCIPAL, broker_settings
from tests.support.security_clients import confluent_config, produce_and_consume

CLOSE_WITHIN_S = 15.0


def test_ssl_listener_produces_and_consumes(secure_broker):
    topic = unique_topic("tls")
    values = produce_and_consume(confluent_config(secure_broker, "SSL"), topic)
    assert values == [b"value-%d" % i for i in range(len(values))] and len(values) == 50


def test_tls_fetch_larger_than_the_copy_pieces_is_whole(secure_broker):
    """1,500 records of ~4 KiB: fetch responses of several MiB, each file
    slice copied through the TLS transport in 256 KiB pieces."""
    topic = unique_topic("tls-large")
    values = produce_and_consume(confluent_config(secure_broker, "SSL"), topic, count=1500, size=4000)
    assert len(values) == 1500
    assert all(v.startswith(b"value-%d" % i) and len(v) == len(b"value-%d" % i) + 4000
               for i, v in enumerate(values))


def test_mtls_with_client_certificate_works(secure_broker):
    topic = unique_topic("mtls")
    config = confluent_config(secure_broker, "MTLS", client_cert=True)
    assert len(produce_and_consume(config, topic)) == 50


def test_mtls_without_client_certificate_is_refused(secure_broker):
    errors: list = []
    producer = Producer({**confluent_config(secure_broker, "MTLS"), "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not errors:
        producer.poll(0.2)
    assert errors and errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT,
                                           KafkaError._ALL_BROKERS_DOWN), errors


def test_certificate_subject_is_the_principal(pki):
    """Kafka's default principal builder: User: + the subject in RFC 2253
    order (most specific first)."""
    config = BrokerConfig({**broker_settings(pki, {name: 1 for name in
                                                   ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS")})})
    listener = next(item for item in config.listeners() if item.name == "MTLS")
    server_context = server_ssl_context(config, listener)
    client_context = ssl.create_default_context(cafile=str(pki.ca_file))
    client_context.load_cert_chain(str(pki.client_cert_file), str(pki.client_key_file))

    async def handshake() -> str | None:
        seen: asyncio.Future = asyncio.get_running_loop().create_future()

        async def serve(reader, writer):
            seen.set_result(tls_principal(writer.get_extra_info("ssl_object")))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
        principal = await asyncio.wait_for(seen, 10)
        writer.close()
        server.close()
        return principal

    assert asyncio.run(handshake()) == CLIENT_PRINCIPAL


def test_kcore_cli_works_through_command_config(secure_broker, tmp_path):
    properties = tmp_path / "client.properties"
    properties.write_text(f"security.protocol=SSL\nssl.truststore.location={secure_broker.pki.ca_file}\n")
    topic = unique_topic("cli-tls")
    created = kcore_cli("topics", "create", topic, "--partitions", "2", "--bootstrap-server",
                        secure_broker.address("SSL"), "--command-config", str(properties))
    assert created.returncode == 0, created.stderr
    listed = kcore_cli("topics", "list", "--bootstrap-server", secure_broker.address("SSL"),
                       "--command-config", str(properties))
    assert listed.returncode == 0 and topic in listed.stdout.split(), listed.stderr
    untrusted = tmp_path / "untrusted.properties"
    untrusted.write_text("security.protocol=SSL\n")
    refused = kcore_cli("topics", "list", "--bootstrap-server", secure_broker.address("SSL"),
                        "--command-config", str(untrusted))
    assert refused.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr


def api_versions_request() -> bytes:
    body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL", "MTLS"])
def test_plaintext_client_on_tls_port_gets_closed_connection(secure_broker, listener):
    with socket.create_connection(("127.0.0.1", secure_broker.ports[listener]), timeout=CLOSE_WITHIN_S) as sock:
        sock.sendall(api_versions_request())
        started = time.monotonic()
        received = b""
        while True:  # the broker's TLS alert, if any, then end of stream
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
            assert len(received) < 1024 and time.monotonic() - started < CLOSE_WITHIN_S
    assert not received.startswith(b"\x00\x00"), "a Kafka answer came back in plaintext"


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_tls_client_on_plaintext_port_gets_closed_connection(secure_broker, listener):
    context = ssl.create_default_context(cafile=str(secure_broker.pki.ca_file))
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", secure_broker.ports[listener]), timeout=CLOSE_WITHIN_S) as sock:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)) as failed:
            context.wrap_socket(sock, server_hostname="127.0.0.1")
    assert not isinstance(failed.value, TimeoutError)
    assert time.monotonic() - started < CLOSE_WITHIN_S
    # The broker is unaffected: a proper client still gets through.
    assert kcore_cli("topics", "list", "--bootstrap-server", secure_broker.address("PLAINTEXT")).returncode == 0

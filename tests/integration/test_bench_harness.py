"""The harness's building blocks on this machine: workload files, payload
corpora, the delaying proxy, veth namespaces, cold-read page dropping."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from kcore.bench import measure, network, payloads, procs
from kcore.bench.workload import Workload, load
from kcore.testing.ports import free_port


def test_workload_files_load_with_the_omb_shapes():
    max_rate = load("1-topic-16-partitions-1kb-max")
    assert (max_rate.partitions, max_rate.message_bytes, max_rate.max_rate) == (16, 1024, True)
    omb = load("1-topic-16-partitions-1kb")
    assert (omb.rate, omb.total_messages) == (50_000, 400_000)
    wide = load("1-topic-100-partitions-1kb-4p-4c-max")
    assert (wide.partitions, wide.producers, wide.consumers) == (100, 4, 4)


def test_workload_rejects_unknown_codec_and_more_consumers_than_partitions():
    with pytest.raises(ValueError, match="codec"):
        Workload(name="w", codec="brotli")
    with pytest.raises(ValueError, match="consumers"):
        Workload(name="w", partitions=2, consumers=3)
    assert Workload(name="w").with_changes(messages="10", codec="lz4").messages == 10


@pytest.mark.parametrize("kind", payloads.KINDS)
def test_payload_pools_are_deterministic_and_about_the_message_size(kind):
    first = payloads.pool(kind, 1024, seed=3, count=50)
    assert first == payloads.pool(kind, 1024, seed=3, count=50)
    assert len(set(first)) == 50
    assert all(1024 <= len(m) < 1024 + 600 for m in first)


def test_json_log_payload_is_newline_separated_json_objects():
    import json
    message = payloads.pool("json-logs", 1024, count=1)[0]
    entries = [json.loads(line) for line in message.split(b"\n")]
    assert len(entries) >= 2 and all("status" in e and "path" in e for e in entries)


def _echo_server() -> int:
    server = socket.create_server(("127.0.0.1", 0))

    def echo(connection) -> None:
        with connection:
            while data := connection.recv(65536):
                connection.sendall(data)

    def serve() -> None:
        while True:
            threading.Thread(target=echo, args=(server.accept()[0],), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def _round_trip_ms(port: int) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            sock.sendall(b"ping")
            assert sock.recv(16) == b"ping"
            best = min(best, (time.perf_counter() - start) * 1000)
    return best


def test_delaying_proxy_adds_its_delay_each_way(tmp_path):
    echo_port, proxy_port = _echo_server(), free_port()
    proxy = procs.spawn([sys.executable, "-m", "kcore.bench.proxy", "--listen-port", str(proxy_port),
                         "--target", f"127.0.0.1:{echo_port}", "--delay-ms", "20"], tmp_path / "proxy.log")
    try:
        procs.wait_for_port("127.0.0.1", proxy_port, proxy, 20, log_path=tmp_path / "proxy.log")
        round_trip = _round_trip_ms(proxy_port)
    finally:
        procs.stop(proxy)
    assert 40 <= round_trip < 200


def _namespaces_permitted() -> bool:
    return os.geteuid() == 0 and subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _namespaces_permitted(), reason="network namespaces need root and iproute2")
def test_veth_pair_connects_the_two_namespaces_it_creates():
    pair = network.NetnsPair(tag=7).create()
    try:
        def listen() -> socket.socket:
            return socket.create_server((pair.server_ip, 0))
        server = network.in_netns(pair.server_ns, listen)
        port = server.getsockname()[1]
        threading.Thread(target=lambda: server.accept()[0].sendall(b"hi"), daemon=True).start()

        def connect() -> bytes:
            with socket.create_connection((pair.server_ip, port), timeout=5) as sock:
                return sock.recv(2)
        assert network.in_netns(pair.client_ns, connect) == b"hi"
        server.close()
    finally:
        pair.close()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert pair.server_ns not in names and pair.client_ns not in names


def test_drop_page_cache_makes_the_segment_files_cold(tmp_path):
    topic_dir = tmp_path / "t-0"
    topic_dir.mkdir()
    (topic_dir / "00000000000000000000.log").write_bytes(os.urandom(4 << 20))
    assert measure.cached_fraction(tmp_path) > 0.9
    assert measure.drop_page_cache(tmp_path) == 4 << 20
    assert measure.cached_fraction(tmp_path) < 0.1
    assert measure.log_bytes(tmp_path, "t") == 4 << 20

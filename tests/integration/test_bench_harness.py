"""The harness's building blocks on this machine: workload files, payload
corpora, the delaying proxy, veth namespaces, cold-read page dropping, the
idle check between rounds."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from kcore.bench import compare, idle, loadgen, measure, network, payloads, procs
from kcore.bench.brokers import Kcore, Setup, Unsupported
from kcore.bench.peers import Kafka09, Tansu
from kcore.bench.sweeps import processes_sweep
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


def test_workload_broker_side_fields_are_checked():
    with pytest.raises(ValueError, match="replication_factor"):
        Workload(name="w", replication_factor=3)
    with pytest.raises(ValueError, match="min_insync_replicas"):
        Workload(name="w", brokers=3, replication_factor=2, min_insync_replicas=3)
    with pytest.raises(ValueError, match="security"):
        Workload(name="w", security="TLS")
    with pytest.raises(ValueError, match="acks"):
        Workload(name="w", transaction_messages=100)
    rf3 = load("3-brokers-16-partitions-rf3-acks-all-1kb-max")
    assert (rf3.brokers, rf3.replication_factor, rf3.min_insync_replicas, rf3.acks) == (3, 3, 2, "all")
    assert load("1-topic-16-partitions-1kb-tls-max").security == "SSL"
    assert load("1-topic-16-partitions-1kb-txn-max").transaction_messages == 10_000
    assert [load(name).name for name in compare.STANDARD_WORKLOADS] == list(compare.STANDARD_WORKLOADS)
    assert rf3.broker_shape != load("1-topic-16-partitions-1kb-max").broker_shape
    # The cluster keeps the replication factor its topics are made with, and
    # the flush setting is the broker's: neither workload may share it.
    assert rf3.broker_shape != load("3-brokers-16-partitions-rf1-acks-1-1kb-max").broker_shape
    assert rf3.broker_shape != rf3.with_changes(min_insync_replicas=1).broker_shape
    max_rate = load("1-topic-16-partitions-1kb-max")
    assert max_rate.broker_shape != max_rate.with_changes(durability="fsync").broker_shape
    assert max_rate.broker_shape == load("1-topic-16-partitions-1kb-20k").broker_shape


@pytest.mark.parametrize("name", ["3-brokers-16-partitions-rf3-acks-all-1kb-max",
                                  "1-topic-16-partitions-1kb-tls-max"])
def test_peers_decline_what_they_cannot_run(name):
    for peer in (Kafka09(), Tansu()):
        with pytest.raises(Unsupported):
            peer.check(Setup(), load(name))
    with pytest.raises(Unsupported, match="transactions"):
        Kafka09().check(Setup(), load("1-topic-16-partitions-1kb-txn-max"))


def test_the_load_generator_leaves_out_what_an_older_librdkafka_refuses():
    """The Kafka 0.9 peer's clients are confluent-kafka 2.0.2, whose
    librdkafka refuses to start with a property it does not know."""
    from confluent_kafka import Consumer, KafkaException, libversion
    config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "fetch.queue.backoff.ms": 10}
    older = loadgen.known_to(config, 0x020002FF)  # librdkafka 2.0.2
    assert older == {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}
    assert loadgen.known_to(config, libversion()[1]) == config  # the client installed here
    Consumer(older).close()
    with pytest.raises(KafkaException, match="No such configuration property"):
        Consumer({**older, "fetch.queue.backoff.ms.typo": 10})


def test_the_processes_sweep_starts_one_broker_per_core_for_auto(tmp_path):
    """num.processes=auto: the harness waits for as many listening broker
    processes as the supervisor starts (one per core it may use)."""
    auto = next(config for config in processes_sweep() if config.label == "kcore auto")
    cores = len(os.sched_getaffinity(0))
    running = Kcore().start(tmp_path, auto.setup, load("tiny-max"))
    try:
        from confluent_kafka.admin import AdminClient
        brokers = AdminClient({"bootstrap.servers": running.bootstrap}).list_topics(timeout=10).brokers
        assert len(brokers) == cores
        host, port = running.bootstrap.rsplit(":", 1)
        for index in range(cores):
            socket.create_connection((host, int(port) + index), timeout=5).close()
    finally:
        running.stop()


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


def test_disk_writes_count_what_reaches_the_disk(tmp_path):
    if "tmpfs" in subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True,
                                 text=True).stdout:
        pytest.skip("the temporary directory is not on a disk")
    before = idle.disk_written_bytes()
    with open(tmp_path / "blob", "wb") as handle:
        handle.write(os.urandom(16 << 20))
        handle.flush()
        os.fsync(handle.fileno())
    assert idle.disk_written_bytes() - before >= 16 << 20


def test_sample_reads_the_load_over_its_window():
    seen = idle.sample(0.3)
    assert seen.load >= 0 and seen.write_mb_s >= 0 and seen.load_avg_1m >= 0


def test_settle_waits_for_idle_and_gives_up_at_its_timeout():
    calm = idle.Settler(idle.IdleRule(timeout_s=10, load=1000, write_mb_s=1e6, window_s=0.2),
                        idle.Ambient(0.0, 0.0)).settle()
    assert calm["idle"] and calm["waited_s"] < 2 and calm["page_cache_dropped"] == (os.geteuid() == 0)
    start = time.monotonic()
    # A load limit below zero: never idle, whatever the machine does.
    busy = idle.Settler(idle.IdleRule(timeout_s=1, load=-1, write_mb_s=1e6, window_s=0.2),
                        idle.Ambient(-2.0, 0.0)).settle()
    assert not busy["idle"] and 1 <= time.monotonic() - start < 5 and busy["load_limit"] == -1

"""One workload against one running broker -> the metrics of one run.

Max rate: the producers send ``messages`` as fast as they can (produce
MB/s over the wall time from the first producer's start to the last one's
flush), then the consumers read them all back from offset 0 (consume MB/s),
optionally after the segments were dropped from the page cache (cold
reads). Broker CPU is read around each phase: CPU-seconds per GB moved.

Rate-limited: the consumers tail the log end, then the producers send at
``rate`` for ``duration_s`` with the send time in each message; every
consumer records ``receive time - send time`` in an HDR histogram, and the
harness merges them. Producers and consumers share this machine's clock.
With the broker's ``log.message.timestamp.type=LogAppendTime`` the
consumers also split each latency at the broker's append time
(``latency_to_append_*`` and ``latency_from_append_*``).

MB is 10^6 bytes of message values (what the application sent).
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from kcore.bench import measure
from kcore.bench.clients import Client

# Headroom over the expected phase length before a client is declared stuck.
PHASE_TIMEOUT_S = 600.0
PROGRESS_REFRESH_S = 0.2


def run_workload(target, running, setup, workload, workdir: Path, progress: bool = False) -> dict:
    """Run ``workload`` on ``running`` (already started with ``setup``) and
    return its metrics (flat dict of numbers)."""
    topic = f"bench-{workload.name}-{uuid.uuid4().hex[:8]}"
    if running.client_netns:
        from kcore.bench.network import in_netns
        in_netns(running.client_netns, target.create_topic, running, topic, workload.partitions)
    else:
        target.create_topic(running, topic, workload.partitions)
    context = _Context(target, running, workload, topic, workdir, progress)
    sampler = measure.BrokerSampler(running.pids)
    try:
        metrics = {"load_avg_start": measure.load_average()}
        cpu_start = sampler.cpu_seconds()
        if workload.max_rate:
            metrics.update(_max_rate(context, sampler, setup))
        else:
            metrics.update(_rate_limited(context, sampler))
        metrics["broker_cpu_s"] = sampler.cpu_seconds() - cpu_start
        metrics["broker_peak_rss_mb"] = sampler.peak_rss / 1e6
        metrics["broker_rss_hwm_mb"] = sampler.rss_hwm_bytes() / 1e6
        metrics["load_avg_end"] = measure.load_average()
        return metrics
    finally:
        sampler.close()


class _Context:
    """What the phases of one run share. Not shared between threads."""

    def __init__(self, target, running, workload, topic: str, workdir: Path, progress: bool):
        self.target, self.running, self.workload, self.topic = target, running, workload, topic
        self.workdir, self.progress = workdir, progress
        self.prefix = ["ip", "netns", "exec", running.client_netns] if running.client_netns else None

    def producer_config(self) -> dict:
        w = self.workload
        return {"bootstrap.servers": self.running.bootstrap, "linger.ms": w.linger_ms,
                "batch.size": w.batch_bytes, "acks": w.acks, "compression.type": w.codec,
                "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                "message.max.bytes": max(1_000_000, w.batch_bytes + 65536),
                **self.target.client_config, **self.running.client_config}

    def consumer_config(self, tail: bool) -> dict:
        # max.partition.fetch.bytes at Kafka's and librdkafka's default (1 MiB),
        # less when a consumer reads so many partitions that their sum would
        # pass fetch.max.bytes (50 MiB): Kafka 0.9's Fetch has no total limit,
        # and 16 partitions x 10 MiB, or 250 x 1 MiB, overflows librdkafka's
        # 100 MB receive.message.max.bytes.
        w = self.workload
        per_consumer = -(-w.partitions // max(w.consumers, 1))
        partition_bytes = min(1_048_576, 52_428_800 // per_consumer)
        # fetch.queue.backoff.ms (settable from librdkafka 2.2): librdkafka
        # stops fetching for 1 s once its queue holds 64 MiB; a consumer
        # that drains that in 0.1 s then idles 0.9 s. Several brokers
        # answering at once fill the queue often: on 16 cores a consumer of
        # 16 broker processes read 0.9 GB/s against 5.5 from 2, with the
        # machine idle. 10 ms resumes about as Kafka's Java consumer does
        # (it fetches again once the buffer drains). An older client runs
        # without it (loadgen.ADDED_IN).
        config = {"bootstrap.servers": self.running.bootstrap, "group.id": f"bench-{self.topic}",
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": partition_bytes,
                  "fetch.queue.backoff.ms": 10,
                  "auto.offset.reset": "latest" if tail else "earliest",
                  **self.target.client_config, **self.running.client_config}
        if tail:
            config.update({"fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
        if w.transaction_messages:
            config["isolation.level"] = "read_committed"
        return config

    def client(self, spec: dict, name: str) -> Client:
        return Client(spec, self.target.client_python(), self.prefix,
                      log_path=self.workdir / f"{name}.log")


def _producers(context: _Context, count: int, rate: float, stamp: bool) -> list[Client]:
    w = context.workload
    partitions = list(range(w.partitions))
    clients = []
    for index in range(w.producers):
        share = count // w.producers + (1 if index < count % w.producers else 0)
        # Every producer writes to every partition, starting at a different one.
        rotated = partitions[index:] + partitions[:index]
        spec = {"role": "producer", "topic": context.topic, "partitions": rotated,
                "config": context.producer_config(), "count": share,
                "rate": rate / w.producers if rate else 0, "message_bytes": w.message_bytes,
                "payload": w.payload, "seed": index, "stamp": stamp}
        if w.transaction_messages:
            spec.update(transaction_messages=w.transaction_messages,
                        transactional_id=f"{context.topic}-{index}")
        clients.append(context.client(spec, f"producer-{index}"))
    return clients


def _consumers(context: _Context, tail: bool, expected: dict | None = None) -> list[Client]:
    w = context.workload
    clients = []
    for index in range(w.consumers):
        owned = [p for p in range(w.partitions) if p % w.consumers == index]
        spec = {"role": "consumer", "topic": context.topic, "partitions": owned,
                "config": context.consumer_config(tail), "mode": "tail" if tail else "catch-up",
                "latency": tail, "expected": sum((expected or {}).get(p, 0) for p in owned)}
        clients.append(context.client(spec, f"consumer-{index}"))
    return clients


def _run_phase(clients: list[Client], total: int, label: str, progress: bool,
               sampler) -> tuple[list[dict], float, float]:
    """go to every client once all are ready, follow progress, collect the
    results; also the broker's CPU-seconds at go and at the last result. The
    clients' start (process, connection, metadata, group coordinator, and
    with it the creation of ``__consumer_offsets``: 50 partitions, ~0.1
    CPU-s here) is a one-time cost outside the window: it is not per byte,
    and on 200 MB it made up half of the fetch figure."""
    try:
        for client in clients:
            client.wait_ready()
        cpu_start = sampler.cpu_seconds()
        for client in clients:
            client.send("go")
        _follow(clients, total, label, progress)
        results = [client.result(PHASE_TIMEOUT_S) for client in clients]
        cpu_end = sampler.cpu_seconds()
    finally:
        for client in clients:
            client.stop()
    return results, cpu_start, cpu_end


def _follow(clients: list[Client], total: int, label: str, progress: bool) -> None:
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=total, desc=label, unit="msg", unit_scale=True, leave=False)
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    try:
        while not all(client.done.is_set() for client in clients) and time.monotonic() < deadline:
            time.sleep(PROGRESS_REFRESH_S)
            if bar is not None:
                bar.n = min(total, sum(client.progress for client in clients))
                bar.refresh()
        if bar is not None:
            bar.n = min(total, sum(client.progress for client in clients))
            bar.refresh()
    finally:
        if bar is not None:
            bar.close()


def _span(results: list[dict]) -> tuple[int, int, float]:
    messages = sum(r["messages"] for r in results)
    size = sum(r["bytes"] for r in results)
    elapsed = max(r["end"] for r in results) - min(r["start"] for r in results)
    return messages, size, max(elapsed, 1e-9)


def _max_rate(context: _Context, sampler, setup) -> dict:
    w = context.workload
    label = f"{context.target.name} {w.name}"
    producers = _producers(context, w.messages, 0, stamp=False)
    produced, cpu0, cpu1 = _run_phase(producers, w.messages, f"{label} produce", context.progress,
                                      sampler)
    _check_delivered(produced)
    messages, size, elapsed = _span(produced)
    metrics = {"messages_produced": messages, "bytes_produced": size,
               "produce_mb_s": size / elapsed / 1e6, "produce_msg_s": messages / elapsed,
               "broker_cpu_s_per_gb_produce": (cpu1 - cpu0) / (size / 1e9),
               "producer_cpu_s_per_gb": sum(r["cpu_s"] for r in produced) / (size / 1e9),
               # Cores busy during the phase: near 1 per client process means
               # that client, not the broker, set the pace.
               "broker_cores_produce": (cpu1 - cpu0) / elapsed,
               "producer_cores": sum(r["cpu_s"] for r in produced) / elapsed}
    if w.transaction_messages:
        metrics["transactions"] = sum(r["transactions"] for r in produced)
    stored = measure.log_bytes(context.running.data_dir, context.topic)
    if stored:
        metrics["log_bytes"] = stored
        metrics["compression_ratio"] = size / stored
    if setup.cold_reads and context.running.data_dir is not None:
        measure.drop_page_cache(context.running.data_dir)
        metrics["cached_fraction_before_read"] = measure.cached_fraction(context.running.data_dir)
    expected: dict = {}
    for result in produced:
        for partition, count in result["per_partition"].items():
            expected[int(partition)] = expected.get(int(partition), 0) + count
    consumers = _consumers(context, tail=False, expected=expected)
    consumed, cpu2, cpu3 = _run_phase(consumers, messages, f"{label} consume", context.progress,
                                      sampler)
    got, got_size, elapsed = _span(consumed)
    if got < messages:
        errors = [e for r in consumed for e in r["errors"]]
        raise RuntimeError(f"consumed {got} of {messages} messages: {errors[:3]}")
    metrics.update({"messages_consumed": got, "consume_mb_s": got_size / elapsed / 1e6,
                    "consume_msg_s": got / elapsed,
                    "broker_cpu_s_per_gb_fetch": (cpu3 - cpu2) / (got_size / 1e9),
                    "consumer_cpu_s_per_gb": sum(r["cpu_s"] for r in consumed) / (got_size / 1e9),
                    "broker_cores_fetch": (cpu3 - cpu2) / elapsed,
                    "consumer_cores": sum(r["cpu_s"] for r in consumed) / elapsed})
    return metrics


def _check_delivered(results: list[dict]) -> None:
    undelivered = sum(r["undelivered"] for r in results)
    if undelivered:
        errors = [e for r in results for e in r["errors"]]
        raise RuntimeError(f"{undelivered} messages not delivered: {errors[:3]}")


def _rate_limited(context: _Context, sampler) -> dict:
    w = context.workload
    total = w.total_messages
    consumers = _consumers(context, tail=True)
    try:
        for consumer in consumers:
            consumer.wait_ready()
        for consumer in consumers:
            consumer.send("go")
        producers = _producers(context, total, w.rate, stamp=True)
        produced, cpu0, _ = _run_phase(producers, total, f"{context.target.name} {w.name} @{w.rate}/s",
                                       context.progress, sampler)
        for consumer in consumers:
            consumer.send("drain")
        consumed = [consumer.result(PHASE_TIMEOUT_S) for consumer in consumers]
        cpu1 = sampler.cpu_seconds()
    finally:
        for consumer in consumers:
            consumer.stop()
    _check_delivered(produced)
    messages, size, elapsed = _span(produced)
    histogram = _merged(consumed, "histogram")
    got = sum(r["messages"] for r in consumed)
    metrics = {"offered_rate": w.rate, "messages_produced": messages, "messages_consumed": got,
               "produce_msg_s": messages / elapsed, "produce_mb_s": size / elapsed / 1e6,
               # produce and fetch together: both run through the whole phase
               "broker_cpu_s_per_gb_e2e": (cpu1 - cpu0) / (size / 1e9),
               "producer_cpu_s_per_gb": sum(r["cpu_s"] for r in produced) / (size / 1e9),
               "latency_count": histogram.get_total_count()}
    for name, percentile in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
        metrics[f"latency_{name}_ms"] = histogram.get_value_at_percentile(percentile) / 1000
    metrics["latency_max_ms"] = histogram.get_max_value() / 1000
    if all("to_append" in result for result in consumed):
        metrics.update(_split(consumed))
    if got < messages:
        metrics["messages_lost"] = messages - got
    return metrics


def _merged(consumed: list[dict], key: str):
    from hdrh.histogram import HdrHistogram

    from kcore.bench.loadgen import HISTOGRAM_RANGE_US
    histogram = HdrHistogram(*HISTOGRAM_RANGE_US)
    for result in consumed:
        histogram.add(HdrHistogram.decode(result[key]))
    return histogram


def _split(consumed: list[dict]) -> dict:
    """Where the latency goes, when the broker stamped its append times
    (``loadgen._Latency``): producer to append, append to consumer."""
    metrics = {}
    for half in ("to_append", "from_append"):
        histogram = _merged(consumed, half)
        for name, percentile in (("p50", 50), ("p90", 90), ("p99", 99)):
            metrics[f"latency_{half}_{name}_ms"] = histogram.get_value_at_percentile(percentile) / 1000
    return metrics

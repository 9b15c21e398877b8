"""The web console's answer times on a large partition, and what its reads
cost the Kafka clients served by the same event loop.

One single-node kcore broker (a subprocess, data in a temp dir) with
``http.listeners`` on loopback. One topic of one partition is filled with
``--records`` 1 KiB JSON records by a confluent-kafka producer, plus
``--topics`` empty topics (the overview and topic list answer for all).
Then each endpoint is called ``--calls`` times over HTTP after one warm-up
call; the summary gives the median and the max in ms and the answer size:

  overview, topics, topic     /api/overview, /api/topics, /api/topics/T
  browse-50, browse-500       /api/topics/T/partitions/0/messages?limit=N
  search-16MiB                .../search?q=<absent>&max_records=100000
                              (the bound: 16 MiB read or 2 s, no match)

Last, ApiVersions round trips on one Kafka connection (``--pings`` of
them, back to back) with the console idle, then while another thread runs
back-to-back searches: the p50/p99 of each, the figure that says whether
a console user stalls the broker's clients (searches yield every batch).

    .venv/bin/python -m bench.bench_console
    .venv/bin/python -m bench.bench_console --records 50000 --calls 3
    .venv/bin/python -m bench.bench_console --out perf_reports/console/runs.jsonl
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kcore.protocol.api_keys import ApiKey
from kcore.testing import BrokerProcess, free_port
from kcore.testing.wire import WireClient

TOPIC = "console-bench"
ABSENT = "no-record-holds-this-text"


def _fill(bootstrap: str, records: int, topics: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [NewTopic(TOPIC, 1, 1)] + [NewTopic(f"empty-{i}", 1, 1) for i in range(topics)]
    for future in admin.create_topics(names).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000})
    pad = "x" * 960
    for i in range(records):
        value = json.dumps({"id": i, "status": 200 + i % 5, "pad": pad}).encode()
        while True:
            try:
                producer.produce(TOPIC, key=str(i).encode(), value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("the producer did not deliver every record in 120 s")


def _get(base: str, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        body = answer.read()
    return (time.perf_counter() - started) * 1000, len(body)


ENDPOINTS = {
    "overview": "/api/overview",
    "topics": "/api/topics",
    "topic": f"/api/topics/{TOPIC}",
    "browse-50": f"/api/topics/{TOPIC}/partitions/0/messages?offset=0&limit=50",
    "browse-500": f"/api/topics/{TOPIC}/partitions/0/messages?offset=0&limit=500",
    "search-16MiB": f"/api/topics/{TOPIC}/partitions/0/search?q={ABSENT}&max_records=100000&offset=0",
}


def _time_endpoints(base: str, calls: int) -> list[dict]:
    rows = []
    for name, path in ENDPOINTS.items():
        _get(base, path)  # warm-up: the page cache and the lazy index loads
        times, size = [], 0
        for _ in range(calls):
            ms, size = _get(base, path)
            times.append(ms)
        rows.append({"endpoint": name, "median_ms": round(statistics.median(times), 2),
                     "max_ms": round(max(times), 2), "answer_bytes": size})
    return rows


def _ping_ms(port: int, pings: int) -> list[float]:
    client = WireClient(port)
    try:
        times = []
        for _ in range(pings):
            started = time.perf_counter()
            client.request(ApiKey.API_VERSIONS, 3, {})
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        client.close()


def _percentiles(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"p50_ms": round(ordered[len(ordered) // 2], 2),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)}


def _pings_during_searches(base: str, port: int, pings: int) -> dict:
    stop = threading.Event()
    searches = [0]

    def search_loop() -> None:
        while not stop.is_set():
            _get(base, ENDPOINTS["search-16MiB"])
            searches[0] += 1

    thread = threading.Thread(target=search_loop, daemon=True)
    thread.start()
    try:
        time.sleep(0.2)  # the first search is under way
        times = _ping_ms(port, pings)
    finally:
        stop.set()
        thread.join(60)
    return {**_percentiles(times), "searches": searches[0]}


def run(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="kcore-console-bench-") as tmp:
        http_port = free_port()
        broker = BrokerProcess(Path(tmp) / "data", {"http.listeners": f"http://127.0.0.1:{http_port}"})
        broker.start()
        try:
            _fill(broker.bootstrap, args.records, args.topics)
            base = f"http://127.0.0.1:{http_port}"
            endpoints = _time_endpoints(base, args.calls)
            idle = _percentiles(_ping_ms(broker.port, args.pings))
            busy = _pings_during_searches(base, broker.port, args.pings)
        finally:
            broker.kill()
    return {"records": args.records, "topics": args.topics + 1, "calls": args.calls,
            "endpoints": endpoints, "api_versions_idle": idle, "api_versions_during_searches": busy}


def summary(result: dict) -> str:
    lines = [f"{result['records']:,} 1 KiB JSON records in one partition, {result['topics']} topics; "
             f"median and max of {result['calls']} calls", "",
             "| endpoint | median ms | max ms | answer bytes |", "|---|---|---|---|"]
    lines += [f"| {r['endpoint']} | {r['median_ms']} | {r['max_ms']} | {r['answer_bytes']:,} |"
              for r in result["endpoints"]]
    idle, busy = result["api_versions_idle"], result["api_versions_during_searches"]
    lines += ["", f"ApiVersions p50/p99: {idle['p50_ms']}/{idle['p99_ms']} ms idle, "
              f"{busy['p50_ms']}/{busy['p99_ms']} ms during {busy['searches']} back-to-back searches"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--topics", type=int, default=999, help="empty topics besides the full one")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--pings", type=int, default=500)
    parser.add_argument("--out", help="append the result as one JSON line")
    args = parser.parse_args(argv)
    result = run(args)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as out:
            out.write(json.dumps(result) + "\n")
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

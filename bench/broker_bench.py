"""End-to-end broker benchmark, kept as a short entry point into the
``kcore bench`` harness (kcore/bench/): the 16-partition 1 KiB workload at
max rate (produce, then consume) and at a fixed rate (end-to-end latency),
against a fresh kcore broker, one JSON line per run on stdout.

    python -m bench.broker_bench --messages 200000 --rate 20000 --seconds 8

For sweeps, peers and reports use ``kcore bench`` (``kcore bench --help``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--target", default="kcore", help="kcore, kafka09, tansu or noida")
    args = parser.parse_args(argv)
    from kcore.bench.sweeps import Config, Sweep
    from kcore.bench.workload import load
    base = {"message_bytes": args.size, "acks": args.acks}
    workloads = [load("1-topic-16-partitions-1kb-max").with_changes(messages=args.messages, **base),
                 load("1-topic-16-partitions-1kb-20k").with_changes(
                     name="1-topic-16-partitions-1kb-rate", rate=args.rate, duration_s=args.seconds, **base)]
    out = Path(tempfile.mkdtemp(prefix="broker-bench-")) / "runs.jsonl"
    records = Sweep("broker_bench", [Config(args.target, args.target)], workloads, out).run()
    for record in records:
        print(json.dumps(record, sort_keys=True))
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())

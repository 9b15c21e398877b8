"""`kcore status`: brokers' health, partitions, topics, groups and lag, read
from their /metrics (``http.listeners``).

Each ``--url`` is one broker (a node of num.processes=N has N: port,
port + 1, ...). Lag is each group's committed offset (on its coordinator)
against the partition's high watermark (on its leader), so give every
broker of a cluster to see every partition's lag. Exit status 1 when a
broker does not answer.
"""
from __future__ import annotations

import sys
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field

DEFAULT_URL = "http://127.0.0.1:9644"
Labels = tuple[tuple[str, str], ...]


def add_parser(commands) -> None:
    parser = commands.add_parser("status", help="brokers' health, partitions, groups and lag (from /metrics)")
    parser.add_argument("--url", action="append", metavar="URL",
                        help=f"a broker's http.listeners address; repeat for each broker (default {DEFAULT_URL})")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each broker")
    parser.set_defaults(run=run)


@dataclass
class Scrape:
    """One broker's samples: name -> {labels: value}."""

    url: str
    samples: dict[str, dict[Labels, float]] = field(default_factory=lambda: defaultdict(dict))

    def value(self, name: str, **labels: str) -> float:
        return self.samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def series(self, name: str) -> dict[Labels, float]:
        return self.samples.get(name, {})


def scrape(url: str, timeout: float) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families
    target = url.rstrip("/") + ("" if url.rstrip("/").endswith("/metrics") else "/metrics")
    with urllib.request.urlopen(target, timeout=timeout) as response:
        text = response.read().decode()
    result = Scrape(url)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            result.samples[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return result


def run(args) -> int:
    scrapes, failed = [], 0
    for url in args.url or [DEFAULT_URL]:
        try:
            scrapes.append(scrape(url, args.timeout))
        except (OSError, ValueError) as exc:
            print(f"{url}: not answering ({exc})", file=sys.stderr)
            failed += 1
    for item in scrapes:
        print(broker_lines(item))
    if scrapes:
        print(topic_table(scrapes))
        print(lag_table(scrapes))
    return 1 if failed else 0


def broker_lines(item: Scrape) -> str:
    info = dict(next(iter(item.series("kcore_broker_info")), ()))
    return (f"broker {info.get('broker_id', '?')} (cluster {info.get('cluster_id', '?')}, kcore "
            f"{info.get('version', '?')}) at {item.url}: up, cpu {item.value('process_cpu_seconds_total'):.1f} s, "
            f"rss {item.value('process_resident_memory_bytes') / 2**20:.0f} MiB, "
            f"{sum(item.series('kafka_server_socket_server_metrics_connection_count').values()):.0f} connections\n"
            f"  partitions {item.value('kafka_server_replicamanager_partitioncount'):.0f} "
            f"(leader of {item.value('kafka_server_replicamanager_leadercount'):.0f}), under-replicated "
            f"{item.value('kafka_server_replicamanager_underreplicatedpartitions'):.0f}, under min ISR "
            f"{item.value('kafka_server_replicamanager_underminisrpartitioncount'):.0f}, offline "
            f"{item.value('kafka_controller_kafkacontroller_offlinepartitionscount'):.0f}")


def _table(header: list[str], rows: list[list]) -> str:
    cells = [header] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells)


def topic_table(scrapes: list[Scrape]) -> str:
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0])
    for item in scrapes:
        for labels, _ in item.series("kafka_topic_partition_current_offset").items():
            totals[dict(labels)["topic"]][0] += 1
        for column, name in enumerate(("bytesin", "messagesin", "bytesout"), start=1):
            for labels, value in item.series(f"kafka_server_brokertopicmetrics_{name}_total").items():
                totals[dict(labels)["topic"]][column] += value
    rows = [[topic, int(p), int(b_in), int(m_in), int(b_out)]
            for topic, (p, b_in, m_in, b_out) in sorted(totals.items()) if not topic.startswith("__")]
    return "\n" + _table(["TOPIC", "PARTITIONS", "BYTES-IN", "MESSAGES-IN", "BYTES-OUT"], rows)


def lag_table(scrapes: list[Scrape]) -> str:
    high = {}
    for item in scrapes:
        for labels, value in item.series("kafka_topic_partition_current_offset").items():
            named = dict(labels)
            high[(named["topic"], named["partition"])] = value
    rows = []
    for item in scrapes:
        for labels, committed in sorted(item.series("kafka_consumergroup_current_offset").items()):
            named = dict(labels)
            end = high.get((named["topic"], named["partition"]))
            rows.append([named["consumergroup"], named["topic"], named["partition"], int(committed),
                         "-" if end is None else int(end), "-" if end is None else max(int(end - committed), 0)])
    return "\n" + _table(["GROUP", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG"], rows)

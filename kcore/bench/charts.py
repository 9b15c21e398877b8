"""PNG charts of the aggregated runs (matplotlib, Agg backend).

Inputs are report.aggregate's items: ``item[metric] = (median, min, max, n)``.
Bars and points are medians; whiskers span min..max of the runs.
"""
from __future__ import annotations

import re
from pathlib import Path

CODEC_COLOURS = {"none": "#7f7f7f", "gzip": "#1f77b4", "snappy": "#ff7f0e", "lz4": "#2ca02c", "zstd": "#d62728"}
CORPUS_MARKERS = {"json-logs": "o", "text": "s", "random": "^", "half-random": "D"}
PERCENTILES = (("p50", "latency_p50_ms"), ("p90", "latency_p90_ms"), ("p99", "latency_p99_ms"),
               ("p99.9", "latency_p999_ms"), ("max", "latency_max_ms"))


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def for_section(sweep: str, sweep_id: str, workload: str, items: list[dict], directory: Path) -> list[Path]:
    stem = slug(f"{sweep_id}-{workload}")
    if items[0]["rate"]:
        if any("latency_p50_ms" in item for item in items):
            return [latency(items, f"{sweep}: {workload}", directory / f"{stem}-latency.png")]
        return []
    if any("produce_mb_s" in item for item in items):
        return [throughput(items, f"{sweep}: {workload}", directory / f"{stem}-throughput.png")]
    return []


def _whiskers(items: list[dict], name: str) -> tuple[list, list]:
    medians: list = []
    spans: list[list] = [[], []]
    for item in items:
        median, low, high, _ = item.get(name, (0.0, 0.0, 0.0, 0))
        medians.append(median or 0.0)
        spans[0].append(max(0.0, (median or 0) - (low or 0)))
        spans[1].append(max(0.0, (high or 0) - (median or 0)))
    return medians, spans


def _plain_ticks(axis) -> None:
    """Log-scale ticks as 2, 5, 10, 20, 50 instead of 2x10^0, 10^1, ...;
    minor ticks other than 2x and 5x stay unlabelled so labels never collide."""
    import math

    from matplotlib.ticker import FuncFormatter

    def minor(value: float, _) -> str:
        if value <= 0:
            return ""
        mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
        return f"{value:g}" if mantissa in (2.0, 5.0) else ""

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(FuncFormatter(minor))


def throughput(items: list[dict], title: str, path: Path) -> Path:
    """Horizontal bars: produce and consume MB/s per config."""
    plt = _pyplot()
    labels = [item["config"] for item in items]
    height = 0.38
    figure, axes = plt.subplots(figsize=(8.5, 1.2 + 0.55 * len(items)))
    positions = list(range(len(items)))
    for offset, (name, colour, label) in enumerate((("produce_mb_s", "#1f77b4", "produce"),
                                                    ("consume_mb_s", "#ff7f0e", "consume"))):
        medians, spans = _whiskers(items, name)
        bars = axes.barh([p + (offset - 0.5) * height for p in positions], medians, height, xerr=spans,
                         color=colour, label=label, capsize=3, error_kw={"elinewidth": 1})
        axes.bar_label(bars, labels=[f"{m:.0f}" for m in medians], padding=4, fontsize=8)
    axes.set_yticks(positions, labels)
    axes.invert_yaxis()
    axes.set_xlabel("MB/s (median; whiskers: min-max over runs)")
    axes.set_title(title, fontsize=11)
    axes.legend(loc="lower right", fontsize=9)
    axes.grid(axis="x", alpha=0.3)
    axes.margins(x=0.15)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def latency(items: list[dict], title: str, path: Path) -> Path:
    """End-to-end latency percentiles per config, log scale."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(8.5, 4.8))
    xs = list(range(len(PERCENTILES)))
    for index, item in enumerate(items):
        # Configs side by side around each percentile so whiskers do not overlap.
        dodge = (index - (len(items) - 1) / 2) * min(0.08, 0.5 / len(items))
        points = [(x + dodge, item[name]) for x, (_, name) in zip(xs, PERCENTILES) if name in item]
        if not points:
            continue
        medians = [stat[0] for _, stat in points]
        axes.errorbar([x for x, _ in points], medians,
                      yerr=[[m - s[1] for m, (_, s) in zip(medians, points)],
                            [s[2] - m for m, (_, s) in zip(medians, points)]],
                      marker="o", capsize=3, label=item["config"])
    axes.axhline(10, color="#d62728", linestyle="--", linewidth=1, label="10 ms goal (p99)")
    axes.set_yscale("log")
    _plain_ticks(axes.yaxis)
    axes.set_xticks(xs, [label for label, _ in PERCENTILES])
    axes.set_xlabel("percentile of end-to-end latency")
    axes.set_ylabel("ms (median of runs; bars: min-max)")
    axes.set_title(title, fontsize=11)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def codecs(items: list[dict], path: Path) -> list[Path]:
    """Compression ratio against produce MB/s and producer CPU per GB."""
    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    for item in items:
        corpus, _, codec = item["config"].rpartition(" ")
        style = {"color": CODEC_COLOURS.get(codec, "black"), "marker": CORPUS_MARKERS.get(corpus, "x"), "s": 60}
        ratio = item["compression_ratio"][0]
        left.scatter(ratio, item["produce_mb_s"][0], **style)
        if "producer_cpu_s_per_gb" in item:
            right.scatter(ratio, item["producer_cpu_s_per_gb"][0], **style)
    right.set_yscale("log")
    _plain_ticks(right.yaxis)
    for axes, label in ((left, "produce MB/s (uncompressed bytes)"), (right, "producer CPU-s per GB (log)")):
        axes.set_xscale("log")
        _plain_ticks(axes.xaxis)
        axes.set_xlabel("compression ratio (message bytes / bytes stored)")
        axes.set_ylabel(label)
        axes.grid(alpha=0.3, which="both")
    handles = [plt.Line2D([], [], color=colour, marker="o", linestyle="", label=codec)
               for codec, colour in CODEC_COLOURS.items()]
    handles += [plt.Line2D([], [], color="black", marker=marker, linestyle="", label=corpus)
                for corpus, marker in CORPUS_MARKERS.items()
                if any(item["config"].startswith(corpus + " ") for item in items)]
    figure.legend(handles=handles, fontsize=9, loc="lower center", ncol=len(handles), frameon=False)
    figure.suptitle("Codecs: compression ratio vs produce speed and producer CPU (medians)", fontsize=11)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return [path]

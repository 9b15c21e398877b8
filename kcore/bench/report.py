"""The performance report: a PySpark job (``local[*]``) over the JSON lines
of every run -> ``REPORT.md`` (Markdown tables) and ``charts/*.png``.

For each sweep invocation (``sweep_id``) and workload, Spark groups the
runs by config and takes, per metric, the median (exact, interpolated
like ``statistics.median``), the minimum, the maximum and the number of
runs. Tables show ``median (min-max)``; ratio tables divide medians measured
in the same sweep: kcore over each peer where the sweep has peers, else
each config over the sweep's first config. A ``kcore bench compare``
sweep gets a before/after table instead: per round, build B's figure over
build A's (the two runs of that round), then the median and min-max of
those ratios over the rounds, as the gate prints them. Runs that were
skipped or failed are listed with their reason.

Numbers are printed by ``fmt`` (3 significant figures), so a reader, or a
test, can recompute a cell from the JSON lines.
"""
from __future__ import annotations

import json
from pathlib import Path

# Each section prints one table per group (a single table would be too wide).
MAX_RATE_METRICS = (
    ("produce_mb_s", "consume_mb_s", "produce_msg_s", "consume_msg_s", "compression_ratio",
     "cached_fraction_before_read", "broker_peak_rss_mb", "load_avg_start"),
    ("broker_cpu_s_per_gb_produce", "broker_cpu_s_per_gb_fetch", "producer_cpu_s_per_gb",
     "consumer_cpu_s_per_gb", "broker_cores_produce", "producer_cores", "broker_cores_fetch",
     "consumer_cores"))
RATE_METRICS = (
    ("produce_msg_s", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p999_ms",
     "latency_max_ms", "messages_lost", "load_avg_start"),
    ("broker_cpu_s_per_gb_e2e", "producer_cpu_s_per_gb", "broker_peak_rss_mb"),
    # only where the broker stamped its append times (LogAppendTime)
    ("latency_to_append_p50_ms", "latency_to_append_p99_ms", "latency_from_append_p50_ms",
     "latency_from_append_p99_ms"))
# The targets on the 16-partition workloads (docs/performance.md#targets).
THROUGHPUT_GOALS = {"tansu": 1.0, "noida": 1.0, "kafka09": 2.0}
LATENCY_GOAL_MS = 10.0
LATENCY_GOAL_RATE = 20_000
GOAL_PARTITIONS = 16


def fmt(value) -> str:
    """3 significant figures, without exponents for the sizes seen here."""
    if value is None:
        return "-"
    value = float(value)
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"


def spark_session():
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[*]").appName("kcore-bench-report")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
            .getOrCreate())


def aggregate(spark, run_files: list[Path]) -> tuple[list[dict], list[dict]]:
    """(aggregates, not_run): one aggregate per sweep_id x workload x config
    with ``<metric>`` -> (median, min, max, n); the skipped/failed runs."""
    from pyspark.sql import functions as F
    runs = spark.read.json([str(path) for path in run_files])
    keys = [F.col("sweep"), F.col("sweep_id"), F.col("workload.name").alias("workload"),
            F.col("workload.rate").alias("rate"), F.col("workload.partitions").alias("partitions"),
            F.col("config"), F.col("target"), F.col("target_version")]
    metric_names = [field.name for field in runs.schema["metrics"].dataType.fields] \
        if "metrics" in runs.columns and hasattr(runs.schema["metrics"].dataType, "fields") else []
    ok = runs.where(F.col("status") == "ok").select(
        *keys, F.col("time"), *[F.col(f"metrics.{name}").cast("double").alias(name) for name in metric_names])
    group = ["sweep", "sweep_id", "workload", "rate", "partitions", "config", "target", "target_version"]
    aggregations = [F.count(F.lit(1)).alias("runs"), F.min("time").alias("first_time")]
    for name in metric_names:
        aggregations += [F.median(name).alias(f"{name}__median"), F.min(name).alias(f"{name}__min"),
                         F.max(name).alias(f"{name}__max"), F.count(name).alias(f"{name}__n")]
    rows = ok.groupBy(*group).agg(*aggregations).collect() if metric_names else []
    aggregates = []
    for row in rows:
        item = {key: row[key] for key in group + ["runs", "first_time"]}
        for name in metric_names:
            if row[f"{name}__n"]:
                item[name] = (row[f"{name}__median"], row[f"{name}__min"], row[f"{name}__max"], row[f"{name}__n"])
        aggregates.append(item)
    not_run = [row.asDict() for row in runs.where(F.col("status") != "ok").select(
        "sweep", "sweep_id", F.col("workload.name").alias("workload"), "config", "status", "reason")
        .dropDuplicates(["sweep_id", "workload", "config", "status"]).collect()]
    return aggregates, not_run


def compare_ratios(spark, run_files: list[Path]) -> dict:
    """(sweep_id, workload) -> figure -> (median, min, max, n) of build B's
    figure / build A's per round, over the compare sweeps' rounds where
    both ran (kcore/bench/compare.py pairs them the same way)."""
    from pyspark.sql import functions as F

    from kcore.bench.compare import ALL_FIGURES, figures_for
    runs = spark.read.json([str(path) for path in run_files])
    # Lines without a compare among them have build null everywhere, which
    # Spark reads as a string column, not a struct.
    if not all(_is_struct(runs, name) for name in ("build", "metrics")) \
            or "label" not in runs.schema["build"].dataType.fieldNames():
        return {}
    present = {field.name for field in runs.schema["metrics"].dataType.fields}
    names = [name for name in ALL_FIGURES if name in present]
    ok = runs.where((F.col("sweep") == "compare") & (F.col("status") == "ok"))
    keys = ["sweep_id", "workload", "rate", "round"]

    def side(label: str):
        return ok.where(F.col("build.label") == label).select(
            "sweep_id", F.col("workload.name").alias("workload"), F.col("workload.rate").alias("rate"),
            "round", *[F.col(f"metrics.{name}").cast("double").alias(f"{label}_{name}") for name in names])
    paired = side("A").join(side("B"), keys)
    ratios = paired.select(*keys, *[F.when(F.col(f"A_{name}") != 0, F.col(f"B_{name}") / F.col(f"A_{name}"))
                                     .alias(name) for name in names])
    aggregations = []
    for name in names:
        aggregations += [F.median(name).alias(f"{name}__median"), F.min(name).alias(f"{name}__min"),
                         F.max(name).alias(f"{name}__max"), F.count(name).alias(f"{name}__n")]
    out: dict = {}
    for row in ratios.groupBy("sweep_id", "workload", "rate").agg(*aggregations).collect() if names else []:
        out[(row["sweep_id"], row["workload"])] = {
            name: (row[f"{name}__median"], row[f"{name}__min"], row[f"{name}__max"], row[f"{name}__n"])
            for name in figures_for(row["rate"]) if name in names and row[f"{name}__n"]}
    return out


def _is_struct(frame, column: str) -> bool:
    return column in frame.columns and hasattr(frame.schema[column].dataType, "fieldNames")


def build_report(run_files: list[Path], out_dir: Path, notes: str = "", spark=None) -> list[Path]:
    """Aggregate ``run_files`` with Spark and write REPORT.md and charts/."""
    from kcore.bench import charts
    own_session = spark is None
    spark = spark or spark_session()
    try:
        aggregates, not_run = aggregate(spark, run_files)
        before_after = compare_ratios(spark, run_files)
    finally:
        if own_session:
            spark.stop()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "charts").mkdir(exist_ok=True)
    sections = _sections(aggregates)
    written = []
    lines = ["# kcore performance report", "",
             f"Generated by `kcore bench report` (PySpark) from {', '.join(p.name for p in run_files)}: "
             f"{sum(a['runs'] for a in aggregates)} runs in {len(sections)} sweep/workload groups.", ""]
    if notes:
        lines += [notes.strip(), ""]
    lines += _goals(sections)
    for (sweep, sweep_id, workload), items in sections.items():
        chart = charts.for_section(sweep, sweep_id, workload, items, out_dir / "charts")
        written += chart
        lines += _section(sweep, sweep_id, workload, items, [p.relative_to(out_dir) for p in chart],
                          before_after.get((sweep_id, workload), {}))
    codec_items = [a for a in aggregates if a["sweep"] == "codecs" and "compression_ratio" in a]
    if codec_items:
        written += charts.codecs(codec_items, out_dir / "charts" / "codecs.png")
        lines += _codec_table(codec_items)
    if not_run:
        lines += ["## Runs not measured", "", "| sweep | workload | config | status | reason |",
                  "|---|---|---|---|---|"]
        for row in sorted(not_run, key=lambda r: (r["sweep_id"], r["workload"], r["config"])):
            reason = (row["reason"] or "").replace("\n", " ").replace("|", "/")[:300]
            lines.append(f"| {row['sweep']} | {row['workload']} | {row['config']} | {row['status']} | {reason} |")
        lines.append("")
    report = out_dir / "REPORT.md"
    report.write_text("\n".join(lines) + "\n")
    return [report] + written


def _sections(aggregates: list[dict]) -> dict:
    sections: dict = {}
    for item in sorted(aggregates, key=lambda a: (a["first_time"] or "", a["sweep_id"])):
        sections.setdefault((item["sweep"], item["sweep_id"], item["workload"]), []).append(item)
    for items in sections.values():
        items.sort(key=lambda a: a["first_time"] or "")
    return sections


def metric_groups(items: list[dict]) -> list[list[str]]:
    groups = RATE_METRICS if items[0]["rate"] else MAX_RATE_METRICS
    present = [[name for name in group if any(name in item for item in items)] for group in groups]
    return [group for group in present if group]


def cell(stat) -> str:
    if stat is None:
        return "-"
    median, low, high, n = stat
    return fmt(median) if n == 1 else f"{fmt(median)} ({fmt(low)}-{fmt(high)})"


def reference(items: list[dict]) -> tuple[list[tuple[dict, dict]], str]:
    """(pairs of (reference, compared) configs, how the ratios read).

    With peers: each peer config against the kcore config of the same
    label once the target's name is swapped ("kcore fsync" for "kafka09
    fsync"), else the first kcore config. Without: each config against the
    section's first config."""
    kcore = [item for item in items if item["target"] == "kcore"]
    peers = [item for item in items if item["target"] != "kcore"]
    if kcore and peers:
        by_label = {item["config"]: item for item in kcore}
        pairs = [(by_label.get(peer["config"].replace(peer["target"], "kcore", 1), kcore[0]), peer)
                 for peer in peers]
        return pairs, "kcore / peer"
    return [(items[0], item) for item in items[1:]], f"config / {items[0]['config']}"


def _pair_label(base: dict, other: dict, reading: str) -> str:
    if reading == "kcore / peer" and base["config"] != "kcore":
        return f"{base['config']} / {other['config']}"
    return other["config"]


def _section(sweep: str, sweep_id: str, workload: str, items: list[dict], charts: list,
             before_after: dict) -> list[str]:
    groups = metric_groups(items)
    lines = [f"## {sweep}: {workload}", "",
             f"Sweep `{sweep_id}`; median (min-max) over n runs per config.", ""]
    for names in groups:
        lines += ["| config | n | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
        for item in items:
            lines.append(f"| {item['config']} | {item['runs']} | "
                         + " | ".join(cell(item.get(name)) for name in names) + " |")
        lines.append("")
    versions = sorted({f"{item['target']} {item['target_version']}" for item in items})
    lines += ["Versions: " + "; ".join(versions) + ".", ""]
    pairs, reading = reference(items)
    if sweep == "compare":
        lines += _before_after(items, before_after)
    elif pairs and sweep != "codecs":  # the codec table below compares codecs
        lines += [f"Ratios of medians ({reading}; above 1 means more of the metric):", "",
                  "| metric | " + " | ".join(_pair_label(b, o, reading) for b, o in pairs) + " |",
                  "|---" * (len(pairs) + 1) + "|"]
        for name in (name for group in groups for name in group):
            cells = [_ratio(b, o, name, reading) for b, o in pairs]
            if not name.startswith("load_avg") and any(c != "-" for c in cells):
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"![{path.stem}]({path})" for path in charts] + [""]
    return lines


def _before_after(items: list[dict], ratios: dict) -> list[str]:
    """The gate's table: each figure's A and B (median, min-max) and B / A
    per round (median, min-max)."""
    labels = {item["config"].split(" ", 1)[0]: item for item in items}
    if not ratios or "A" not in labels or "B" not in labels:
        return ["No round where both builds ran: no before/after ratios.", ""]
    before, after = labels["A"], labels["B"]
    lines = [f"Before/after: A = {before['config'].split(' ', 1)[-1]} ({before['target_version']}), "
             f"B = {after['config'].split(' ', 1)[-1]} ({after['target_version']}); B / A per round, median (min-max) "
             "over rounds (MB/s: above 1 is faster; latency, CPU-s per GB, RSS: below 1 is better).", "",
             "| figure | A | B | B / A | rounds |", "|---|---|---|---|---|"]
    for name, stat in ratios.items():
        median, low, high, n = stat
        spread = f"{fmt(median)}x" if n == 1 else f"{fmt(median)}x ({fmt(low)}-{fmt(high)}x)"
        lines.append(f"| {name} | {cell(before.get(name))} | {cell(after.get(name))} | {spread} | {n} |")
    return lines + [""]


def ratio(base: dict, other: dict, name: str, reading: str) -> float | None:
    if name not in base or name not in other:
        return None
    top, bottom = (base, other) if reading == "kcore / peer" else (other, base)
    if not bottom[name][0]:
        return None
    return top[name][0] / bottom[name][0]


def _ratio(base: dict, other: dict, name: str, reading: str) -> str:
    value = ratio(base, other, name, reading)
    return "-" if value is None else f"{fmt(value)}x"


def _goals(sections: dict) -> list[str]:
    """The targets (docs/performance.md#targets), checked on the latest peers
    sweep of each 16-partition workload."""
    latest = {}
    for (sweep, _, workload), items in sections.items():
        if sweep == "peers" and items[0]["partitions"] == GOAL_PARTITIONS:
            latest[workload] = items
    rows = []
    for workload, items in latest.items():
        pairs, reading = reference(items)
        if reading != "kcore / peer":
            continue
        rows += _throughput_goals(workload, pairs) if not items[0]["rate"] else []
        if items[0]["rate"] == LATENCY_GOAL_RATE:
            rows += _latency_goals(workload, pairs)
    if not rows:
        return []
    lines = ["## Goals (latest peers sweep, medians)", "", "| workload | goal | measured | met | short by |",
             "|---|---|---|---|---|"]
    lines += [f"| {w} | {g} | {m} | {'yes' if ok else 'NO'} | {s} |" for w, g, m, ok, s in rows]
    return lines + [""]


def _throughput_goals(workload: str, pairs: list) -> list[tuple]:
    rows = []
    for base, other in pairs:
        goal = THROUGHPUT_GOALS.get(other["target"])
        for name in ("produce_mb_s", "consume_mb_s"):
            value = ratio(base, other, name, "kcore / peer")
            if goal is not None and value is not None:
                rows.append((workload, f"{name} >= {goal:g}x {other['config']}", f"{fmt(value)}x",
                             value >= goal, f"{(1 - value / goal) * 100:.0f}% short" if value < goal else ""))
    return rows


def _latency_goals(workload: str, pairs: list) -> list[tuple]:
    base = pairs[0][0]
    if "latency_p99_ms" not in base:
        return []
    p99 = base["latency_p99_ms"][0]
    rows = [(workload, f"p99 <= {LATENCY_GOAL_MS:g} ms", f"{fmt(p99)} ms", p99 <= LATENCY_GOAL_MS,
             f"{p99 - LATENCY_GOAL_MS:.1f} ms over" if p99 > LATENCY_GOAL_MS else "")]
    for _, other in pairs:
        if "latency_p99_ms" in other:
            theirs = other["latency_p99_ms"][0]
            rows.append((workload, f"p99 below {other['config']}'s", f"{fmt(p99)} vs {fmt(theirs)} ms",
                         p99 < theirs, "" if p99 < theirs else f"{p99 - theirs:.1f} ms over"))
    return rows


def _codec_table(items: list[dict]) -> list[str]:
    lines = ["## Codecs: ratio and speed", "",
             "Compression ratio = message bytes / bytes in the broker's segment files (batch headers included).",
             "", "| corpus codec | n | ratio | produce MB/s | consume MB/s | producer CPU-s/GB "
             "| broker CPU-s/GB produce |",
             "|---|---|---|---|---|---|---|"]
    for item in sorted(items, key=lambda a: a["config"]):
        lines.append(f"| {item['config']} | {item['runs']} | " + " | ".join(
            cell(item.get(name)) for name in ("compression_ratio", "produce_mb_s", "consume_mb_s",
                                              "producer_cpu_s_per_gb", "broker_cpu_s_per_gb_produce")) + " |")
    lines += ["", "![codecs](charts/codecs.png)", ""]
    return lines


def read_runs(run_files: list[Path]) -> list[dict]:
    """The JSON lines as dicts (for checks outside Spark)."""
    records = []
    for path in run_files:
        with open(path) as handle:
            records += [json.loads(line) for line in handle if line.strip()]
    return records

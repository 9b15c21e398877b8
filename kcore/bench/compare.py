"""``kcore bench compare``: the regression gate. Two builds of kcore, A
(a git ref, the "before") and B (this checkout, or another ref), run the
same workloads in interleaved rounds, and each figure is printed as the
ratio B / A with its spread.

- Builds: kcore/bench/builds.py (a throw-away worktree, a venv of its own
  or this one, the Cython kernels built).
- Rounds: a ``per_workload`` sweep (kcore/bench/sweeps.py): on each
  workload the builds take turns (A B, then B A in the next round), each
  on a fresh broker (or cluster) with its own data, only one running at a
  time, the page cache written back and dropped and the machine idle
  before each (kcore/bench/idle.py).
- Ratios: per round, B's figure over A's from the two runs of that round
  (neighbours in time, so drift in the machine's load hits both alike),
  then the median and the min-max over the rounds. A ratio says nothing
  about a round where either build failed; those are listed with the
  reason (A may predate what a workload needs: TLS, a cluster).

Every run is one JSON line (sweep "compare", ``build`` names its label,
ref and commit); ``kcore bench report`` puts the same per-round ratios
in a before/after table.
"""
from __future__ import annotations

import statistics
from collections import defaultdict

# What the gate compares (docs/performance.md#the-regression-gate).
STANDARD_WORKLOADS = (
    "1-topic-16-partitions-1kb-max",                 # produce / consume MB/s, CPU per GB
    "1-topic-16-partitions-1kb-20k",                 # end-to-end latency at 20k msg/s
    "1-topic-16-partitions-1kb",                     # ... at 50k msg/s (the OMB workload)
    "1-topic-1000-partitions-1kb-4p-4c-max",         # 1,000 partitions
    "3-brokers-16-partitions-rf3-acks-all-1kb-max",  # RF 3, acks=all, 3 brokers
    "1-topic-16-partitions-1kb-tls-max",             # TLS
    "1-topic-16-partitions-1kb-txn-max",             # transactions
)
MAX_RATE_FIGURES = ("produce_mb_s", "consume_mb_s", "broker_cpu_s_per_gb_produce",
                    "broker_cpu_s_per_gb_fetch", "broker_peak_rss_mb")
RATE_FIGURES = ("latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "broker_cpu_s_per_gb_e2e",
                "broker_peak_rss_mb")
# Figures where more is better; for the others (latency, CPU, memory) less is.
HIGHER_IS_BETTER = ("produce_mb_s", "consume_mb_s")
ALL_FIGURES = tuple(dict.fromkeys(MAX_RATE_FIGURES + RATE_FIGURES))


def figures_for(rate: int) -> tuple[str, ...]:
    """The figures compared on a workload of this rate (0 = max rate)."""
    return RATE_FIGURES if rate else MAX_RATE_FIGURES


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def paired_ratios(records: list[dict]) -> dict:
    """workload -> figure -> [B / A per round], from the rounds where both
    builds' runs are ok and A's figure is not zero."""
    by_round: dict = defaultdict(dict)
    for record in records:
        if record.get("build") and record["status"] == "ok":
            by_round[(record["workload"]["name"], record["round"])][record["build"]["label"]] = record
    ratios: dict = defaultdict(lambda: defaultdict(list))
    for (workload, _), pair in sorted(by_round.items()):
        if "A" not in pair or "B" not in pair:
            continue
        before, after = pair["A"]["metrics"], pair["B"]["metrics"]
        for figure in figures_for(pair["A"]["workload"]["rate"]):
            if before.get(figure) and figure in after:
                ratios[workload][figure].append(after[figure] / before[figure])
    return ratios


def _fmt(value: float) -> str:
    from kcore.bench.report import fmt
    return fmt(value)


def _cell(values: list[float], suffix: str = "") -> str:
    if not values:
        return "-"
    median, low, high = spread(values)
    if len(values) == 1:
        return f"{_fmt(median)}{suffix}"
    return f"{_fmt(median)}{suffix} ({_fmt(low)}-{_fmt(high)}{suffix})"


def summary(records: list[dict], builds: dict) -> list[str]:
    """The gate's printout: per workload, each figure's A and B medians
    (min-max) and the ratio B / A per round, median (min-max)."""
    ratios = paired_ratios(records)
    names = list(dict.fromkeys(r["workload"]["name"] for r in records))
    lines = [f"A = {builds['A'].ref} ({builds['A'].version}), B = {builds['B'].ref} ({builds['B'].version}); "
             "ratios are B / A per round, median (min-max) over rounds: above 1 is faster for MB/s, "
             "slower (worse) for latency, CPU-s per GB and RSS"]
    for name in names:
        runs = [r for r in records if r["workload"]["name"] == name]
        rate = runs[0]["workload"]["rate"]
        rounds = len({r["round"] for r in runs})
        lines += ["", f"{name} ({rounds} round{'s' if rounds != 1 else ''})",
                  f"  {'figure':30} {'A':>24} {'B':>24} {'B / A':>24}"]
        for figure in figures_for(rate):
            values = {label: [r["metrics"][figure] for r in runs
                              if r["status"] == "ok" and r["build"]["label"] == label and figure in r["metrics"]]
                      for label in ("A", "B")}
            lines.append(f"  {figure:30} {_cell(values['A']):>24} {_cell(values['B']):>24} "
                         f"{_cell(ratios[name][figure], 'x'):>24}")
        for record in runs:
            if record["status"] != "ok":
                reason = " ".join((record["reason"] or "").split())[-300:]
                lines.append(f"  {record['build']['label']} {record['status']} in round {record['round']}: {reason}")
    return lines


def run(builds: dict, workloads: list, out, rounds: int, progress: bool, settler) -> list[dict]:
    """Interleaved rounds of ``workloads`` on builds A and B -> the records."""
    from kcore.bench.sweeps import Config, Sweep
    configs = [Config(f"{label} {build.ref}", "kcore", build=build) for label, build in sorted(builds.items())]
    sweep = Sweep("compare", configs, workloads, out, rounds, progress, settler=settler, per_workload=True)
    return sweep.run()

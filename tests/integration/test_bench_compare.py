"""`kcore bench compare`, the regression gate, end to end on a tiny
workload: HEAD built on the side (a throw-away worktree, --reuse-venv:
this environment's dependencies, the kernels copied from this checkout
where native/ is identical) against this checkout, one interleaved round
of a max-rate and a latency workload, then the JSON lines, the printed
ratios and the report's before/after table checked against each other.

Not a performance test: the ratios are only checked to exist, to be
finite and positive, and to be B / A of the JSON lines' figures.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from kcore.bench import compare, report
from tests.support.cli import kcore_command

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 240
WORKLOADS = ("tiny-max", "tiny-rate")


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("gate")
    out = base / "runs.jsonl"
    done = subprocess.run(
        kcore_command("bench", "compare", "HEAD", "--reuse-venv", "--builds-dir", str(base / "builds"),
                      "--workload", WORKLOADS[0], "--workload", WORKLOADS[1], "--rounds", "1",
                      "--idle-timeout", "3", "--out", str(out), "--no-progress"),
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return {"records": records, "stdout": done.stdout, "stderr": done.stderr, "out": out,
            "builds": base / "builds"}


def _head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_both_builds_ran_every_workload_in_one_interleaved_round(gate):
    records = gate["records"]
    assert sorted((r["workload"]["name"], r["build"]["label"]) for r in records) == \
        sorted((w, label) for w in WORKLOADS for label in ("A", "B"))
    for record in records:
        assert record["status"] == "ok", record["reason"]
        assert record["sweep"] == "compare" and record["round"] == 0
        assert record["metrics"]["messages_consumed"] == record["metrics"]["messages_produced"] > 0
        assert record["settle"]["sync_s"] >= 0 and "idle" in record["settle"]
        assert record["settle"]["page_cache_dropped"] == (os.geteuid() == 0)
    # the builds take turns on each workload: A B for the first, A B for the next
    assert [r["build"]["label"] for r in records] == ["A", "B", "A", "B"]
    assert len({r["sweep_id"] for r in records}) == 1


def test_build_a_is_the_ref_from_its_own_tree_and_b_this_checkout(gate):
    build_a = next(r["build"] for r in gate["records"] if r["build"]["label"] == "A")
    build_b = next(r["build"] for r in gate["records"] if r["build"]["label"] == "B")
    assert build_a["ref"] == "HEAD" and build_a["commit"] == _head() and build_a["mode"] == "reuse-venv"
    site = Path(build_a["site"])
    assert site.is_relative_to(gate["builds"]) and (site / "kcore" / "cli" / "main.py").is_file()
    assert list((site / "kcore" / "_native").glob("records*.so"))
    marker = json.loads((site.parent / "build.json").read_text())
    assert marker["commit"] == _head() and marker["kernels"].startswith("copied")
    assert build_b["mode"] == "checkout" and build_b["site"] is None and build_b["commit"] == _head()
    # each build's broker ran on its own kernels (the .so files mapped into it)
    for record in gate["records"]:
        expected = site / "kcore" / "_native" if record["build"]["label"] == "A" else REPO / "kcore" / "_native"
        assert record["broker_kernels"] == [str(expected)], record["broker_kernels"]
    # the worktree is gone once built, and git has no record of it left
    assert not (site.parent / "src").exists()
    worktrees = subprocess.run(["git", "-C", str(REPO), "worktree", "list", "--porcelain"],
                               capture_output=True, text=True, check=True).stdout
    assert str(site.parent / "src") not in worktrees


def _printed(stdout: str, workload: str) -> dict:
    """figure -> (A, B, B / A) cells of the workload's printed table."""
    block = stdout.split(f"\n{workload} (", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows = {}
    for line in block:
        fields = line.split()
        if len(fields) == 4:
            rows[fields[0]] = tuple(fields[1:])
    return rows


def _with_ratio(runs: dict, figures) -> set[str]:
    """The figures a ratio is printed for: A's is not zero. A tiny run's
    broker CPU in a phase can be under one clock tick (10 ms): 0, in A or
    in B (a ratio of 0 then)."""
    return {figure for figure in figures if runs["A"][figure]}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_printed_ratios_are_b_over_a_of_the_json_lines(gate, workload):
    runs = {r["build"]["label"]: r["metrics"] for r in gate["records"] if r["workload"]["name"] == workload}
    rows = _printed(gate["stdout"], workload)
    rate = next(r["workload"]["rate"] for r in gate["records"] if r["workload"]["name"] == workload)
    assert set(rows) == set(compare.figures_for(rate))
    for figure, (cell_a, cell_b, cell_ratio) in rows.items():
        assert (cell_a, cell_b) == (report.fmt(runs["A"][figure]), report.fmt(runs["B"][figure]))
        if figure not in _with_ratio(runs, [figure]):
            assert cell_ratio == "-", figure  # no ratio over a zero
            continue
        expected = runs["B"][figure] / runs["A"][figure]
        assert math.isfinite(expected) and expected >= 0, figure
        assert cell_ratio == f"{report.fmt(expected)}x", figure


def test_report_has_the_before_after_table(gate, spark, tmp_path):
    report.build_report([gate["out"]], tmp_path, spark=spark)
    text = (tmp_path / "REPORT.md").read_text()
    for workload in WORKLOADS:
        body = text.split(f"## compare: {workload}\n", 1)[1].split("\n## ", 1)[0]
        table = body.split("| figure | A | B | B / A | rounds |", 1)[1].strip().splitlines()[1:]
        cells = {row.strip("|").split("|")[0].strip(): [c.strip() for c in row.strip("|").split("|")]
                 for row in table if row.startswith("|")}
        runs = {r["build"]["label"]: r["metrics"] for r in gate["records"] if r["workload"]["name"] == workload}
        assert set(cells) == _with_ratio(runs, compare.figures_for(runs["A"].get("offered_rate", 0)))
        for figure, row in cells.items():
            assert row[3] == f"{report.fmt(runs['B'][figure] / runs['A'][figure])}x" and row[4] == "1"

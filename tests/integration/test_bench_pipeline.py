"""`kcore bench` end to end: a tiny workload run against a real kcore
broker -> JSON lines -> the PySpark report -> tables and charts, with the
tables' numbers recomputed from the JSON lines."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import pytest

from kcore.bench import report
from tests.support.cli import kcore_command

RUN_TIMEOUT_S = 120
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "runs.jsonl"
    done = subprocess.run(kcore_command("bench", "run", "tiny-max", "tiny-rate",
                                        "--rounds", "2", "--out", str(out), "--no-progress",
                                        "--idle-timeout", "3"),
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def built(runs, spark, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("report")
    report.build_report([runs], out_dir, notes="Test notes line.", spark=spark)
    return out_dir


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_run_is_one_json_line_with_machine_versions_workload_config_metrics(runs):
    records = _records(runs)
    assert [r["workload"]["name"] for r in records] == ["tiny-max", "tiny-rate"] * 2
    for record in records:
        assert record["status"] == "ok", record["reason"]
        assert record["machine"]["cpus"] >= 1 and record["machine"]["kernel"]
        assert record["target"] == "kcore" and record["target_version"].startswith("0.")
        assert record["client"]["library"] == "confluent-kafka" and record["client"]["librdkafka"]
        assert record["setup"]["network"] == "loopback"
        assert record["metrics"]["messages_consumed"] == record["metrics"]["messages_produced"]
        assert record["metrics"]["broker_peak_rss_mb"] > 1
    max_rate = [r["metrics"] for r in records if r["workload"]["rate"] == 0]
    assert all(m["messages_produced"] == 3000 and m["produce_mb_s"] > 0 and m["consume_mb_s"] > 0
               for m in max_rate)
    latency = [r["metrics"] for r in records if r["workload"]["rate"]]
    assert all(m["latency_count"] == 1000 and 0 < m["latency_p50_ms"] <= m["latency_p99_ms"]
               <= m["latency_max_ms"] for m in latency)
    # CreateTime (the default): no append time to split the latency at
    assert not any("latency_to_append_p50_ms" in m for m in latency)


def test_report_writes_markdown_tables_and_png_charts(built):
    text = (built / "REPORT.md").read_text()
    assert "Test notes line." in text
    assert "## run: tiny-max" in text and "## run: tiny-rate" in text
    charts = sorted((built / "charts").glob("*.png"))
    assert sorted(c.name.rsplit("-", 1)[-1] for c in charts) == ["latency.png", "throughput.png"]
    for chart in charts:
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 10_000
        assert f"](charts/{chart.name})" in text


def _table_row(text: str, section: str, config: str) -> dict:
    """The config's cells in every table of the section, by column name."""
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    cells: dict = {}
    for table in body.split("\n\n"):
        lines = table.strip().splitlines()
        if not lines or not lines[0].startswith("| config |"):
            continue
        row = next(line for line in lines if line.startswith(f"| {config} |"))
        names = [c.strip() for c in lines[0].strip("|").split("|")]
        cells.update(zip(names, (c.strip() for c in row.strip("|").split("|"))))
    return cells


@pytest.mark.parametrize("workload,metrics", [
    ("tiny-max", ["produce_mb_s", "consume_mb_s", "broker_cpu_s_per_gb_produce", "consumer_cores",
                  "broker_peak_rss_mb"]),
    ("tiny-rate", ["latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "produce_msg_s",
                   "broker_cpu_s_per_gb_e2e"]),
])
def test_report_cells_are_median_min_max_of_the_json_lines(built, runs, workload, metrics):
    row = _table_row((built / "REPORT.md").read_text(), f"run: {workload}", "kcore")
    records = [r for r in _records(runs) if r["workload"]["name"] == workload]
    assert row["n"] == "2"
    for name in metrics:
        values = [r["metrics"][name] for r in records]
        expected = f"{report.fmt(statistics.median(values))} ({report.fmt(min(values))}-{report.fmt(max(values))})"
        assert row[name] == expected, name

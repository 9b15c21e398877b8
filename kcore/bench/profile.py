"""Where a kcore broker's time goes under a workload: run the workload
against a broker started under cProfile (``python -m cProfile -o F -m
kcore.cli.main broker``; SIGTERM makes the broker exit cleanly, which writes
F), then summarise F as Markdown: time per area of the code and the top
functions by own time.

cProfile sees Python frames only. uvloop's C event loop (socket reads,
callbacks' glue, and the idle wait in epoll) shows up as the own time of
``asyncio.runners.run``; a transport.write's send(2) and the Cython kernels
(built without profiling hooks: CRC, batch patching, sendfile) count in the
own time of the Python function that called them; the broker's CPU seconds measured from
/proc during the same run are printed beside it, so idle time can be told
apart. cProfile's own overhead slows the broker (often 1.5-2x): read the
shares, not the absolute times.
"""
from __future__ import annotations

import pstats
import tempfile
from pathlib import Path

# (area, test on (filename, function name)); first match wins.
AREAS = (
    ("event loop (uvloop C: socket I/O, scheduling, idle wait)",
     lambda f, n: f.endswith("asyncio/runners.py") and n == "run"),
    ("system calls (os.*)", lambda f, n: f == "~" and ("posix." in n or "select" in n)),
    ("server: connections, framing", lambda f, n: "/kcore/server/" in f),
    ("handlers", lambda f, n: "/kcore/handlers/" in f),
    ("protocol encode/decode", lambda f, n: "/kcore/protocol/" in f or "kcore.protocol" in f),
    ("replication: partition state", lambda f, n: "/kcore/replication/" in f),
    ("log: segments, indexes", lambda f, n: "/kcore/log/" in f),
    ("coordinator", lambda f, n: "/kcore/coordinator/" in f),
    ("start-up (imports, compile)", lambda f, n: "importlib" in f or n in ("<built-in method builtins.compile>",
                                                                           "<built-in method marshal.loads>")),
    ("other Python", lambda f, n: True),
)


def _area(filename: str, name: str) -> str:
    return next(area for area, test in AREAS if test(filename, name))


def _label(key: tuple) -> str:
    filename, line, name = key
    if filename == "~":
        return name
    marker = "/kcore/"
    short = filename[filename.index(marker) + 1:] if marker in filename else Path(filename).name
    return f"{short}:{line}({name})"


def summarize(prof_path: Path, title: str, broker_cpu_s: float | None = None, top: int = 25) -> str:
    stats = pstats.Stats(str(prof_path))
    rows = stats.stats  # type: ignore[attr-defined]  # key -> (calls, calls, tottime, cumtime, callers); not in typeshed
    total = sum(row[2] for row in rows.values()) or 1e-9
    by_area: dict[str, float] = {}
    for key, row in rows.items():
        area = _area(key[0], key[2])
        by_area[area] = by_area.get(area, 0.0) + row[2]
    lines = [f"# Broker profile: {title}", "",
             f"cProfile own time summed over all functions: {total:.2f} s"
             + (f"; broker CPU measured from /proc over the workload (start-up and topic creation not included): "
                f"{broker_cpu_s:.2f} s" if broker_cpu_s else "")
             + ". Shares are of the profiled time. The event loop row includes idle waiting; Cython "
             "kernels and uvloop's transport writes count in their Python caller's own time.", "",
             "| area | own time s | share |", "|---|---|---|"]
    for area, seconds in sorted(by_area.items(), key=lambda item: -item[1]):
        lines.append(f"| {area} | {seconds:.3f} | {seconds / total * 100:.1f}% |")
    lines += ["", f"Top {top} functions by own time:", "",
              "| function | calls | own s | own us/call | cumulative s |", "|---|---|---|---|---|"]
    ranked = sorted(rows.items(), key=lambda item: -item[1][2])[:top]
    for key, (_, calls, own, cumulative, _) in ranked:
        label = _label(key).replace("|", "/")
        lines.append(f"| `{label}` | {calls} | {own:.3f} | {own / max(calls, 1) * 1e6:.1f} | {cumulative:.3f} |")
    return "\n".join(lines) + "\n"


def profile_workloads(workloads: list, out_dir: Path, progress: bool = False) -> list[Path]:
    """Each workload on its own cProfiled kcore broker; one Markdown summary
    per workload in ``out_dir``."""
    from kcore.bench.sweeps import Config, Sweep
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for workload in workloads:
        with tempfile.TemporaryDirectory(prefix="kcore-profile-") as scratch:
            profile_dir = Path(scratch)
            sweep = Sweep("profile", [Config("kcore (cProfile)")], [workload], profile_dir / "runs.jsonl",
                          progress=progress, profile_dir=profile_dir)
            record = sweep.run()[0]
            if record["status"] != "ok":
                raise RuntimeError(f"{workload.name}: {record['reason']}")
            prof = next(profile_dir.glob("*.prof"))
            metrics = record["metrics"]
            text = summarize(prof, f"{workload.name} ({workload.description})", metrics.get("broker_cpu_s"))
            text += "\n" + _run_line(metrics) + "\n"
        path = out_dir / f"profile-{workload.name}.md"
        path.write_text(text)
        written.append(path)
    return written


def _run_line(metrics: dict) -> str:
    keys = ("produce_mb_s", "consume_mb_s", "latency_p50_ms", "latency_p99_ms", "broker_cpu_s_per_gb_produce",
            "broker_cpu_s_per_gb_fetch", "broker_cpu_s_per_gb_e2e")
    figures = ", ".join(f"{key} {metrics[key]:.3g}" for key in keys if key in metrics)
    return f"The profiled run (slowed by cProfile): {figures}."

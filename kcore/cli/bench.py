"""`kcore bench`: run workloads and sweeps against kcore and peer brokers,
and build the performance reports from their JSON lines.

    kcore bench workloads
    kcore bench run 1-topic-16-partitions-1kb-max --rounds 3 --out runs.jsonl
    kcore bench sweep peers --workload 1-topic-16-partitions-1kb-max \
        --workload 1-topic-16-partitions-1kb-20k --rounds 5 --out runs.jsonl
    kcore bench compare c6cdba0 --against main --rounds 3 \
        --workload 1-topic-16-partitions-1kb-max --workload 1-topic-16-partitions-1kb-20k
    kcore bench report runs.jsonl --out perf_reports
    kcore bench profile 1-topic-16-partitions-1kb-20k --out perf_reports/profiles
"""
from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_RUNS = "perf_reports/runs.jsonl"


def add_parser(commands) -> None:
    parser = commands.add_parser("bench", help="benchmarks: workloads, sweeps, peer brokers, reports")
    verbs = parser.add_subparsers(dest="bench_command", required=True)
    verbs.add_parser("workloads", help="list the workload files").set_defaults(run=_workloads)

    run = verbs.add_parser("run", help="run workloads against one target")
    run.add_argument("workloads", nargs="+", help="workload names (`kcore bench workloads` lists them) or TOML paths")
    run.add_argument("--target", default="kcore", help="kcore, kafka09, tansu or noida")
    run.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                     help="broker config key for kcore (repeatable)")
    _common(run)
    run.set_defaults(run=_run)

    sweep = verbs.add_parser("sweep", help="run a built-in sweep: peers, durability, disk, network, "
                                           "codecs, processes, metrics, security")
    sweep.add_argument("name", help="peers, durability, disk, network, codecs, processes, metrics or security")
    sweep.add_argument("--workload", action="append", required=True, help="workload (repeatable)")
    sweep.add_argument("--only", help="comma-separated config labels to keep")
    _common(sweep)
    sweep.set_defaults(run=_sweep)

    _add_compare(verbs)

    profile = verbs.add_parser("profile", help="run workloads against a cProfiled kcore; Markdown summaries")
    profile.add_argument("workloads", nargs="+", help="workload names or TOML paths")
    profile.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    profile.add_argument("--out", default="perf_reports/profiles", help="directory for profile-<workload>.md")
    profile.add_argument("--no-progress", action="store_true")
    profile.set_defaults(run=_profile)

    report = verbs.add_parser("report", help="aggregate JSON lines into Markdown tables and PNG charts (Spark)")
    report.add_argument("runs", nargs="*", default=[DEFAULT_RUNS], help=f"JSON lines files (default {DEFAULT_RUNS})")
    report.add_argument("--out", default="perf_reports", help="report directory (default perf_reports)")
    report.add_argument("--notes", help="Markdown file whose text is put under the report's title")
    report.set_defaults(run=_report)


def _add_compare(verbs) -> None:
    from kcore.bench.compare import STANDARD_WORKLOADS
    compare = verbs.add_parser(
        "compare", help="the regression gate: build a git ref (A) and compare it with this checkout "
                        "or --against (B), interleaved; ratios B / A")
    compare.add_argument("ref", help="git ref of build A, the before (a commit, a branch, HEAD~3)")
    compare.add_argument("--against", metavar="REF",
                         help="git ref of build B (default: this checkout as it is, uncommitted edits included)")
    compare.add_argument("--workload", action="append",
                         help="workload (repeatable); default the standard set: " + ", ".join(STANDARD_WORKLOADS))
    compare.add_argument("--reuse-venv", action="store_true",
                         help="build a ref into this environment (its dependencies; kernels copied from this "
                              "checkout where native/ is identical) instead of a venv of its own")
    compare.add_argument("--rebuild", action="store_true", help="build again even where a build of the commit exists")
    compare.add_argument("--builds-dir", type=Path, help="where builds are kept (default <bench cache>/builds)")
    compare.add_argument("--repo", type=Path, help="the git repository of the refs (default: this kcore's checkout)")
    _common(compare, rounds=3, profile=False)
    compare.set_defaults(run=_compare)


def _common(parser, rounds: int = 1, profile: bool = True) -> None:
    parser.add_argument("--rounds", type=int, default=rounds, help=f"interleaved rounds (default {rounds})")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a workload field, e.g. --set messages=50000")
    parser.add_argument("--out", default=DEFAULT_RUNS, help=f"JSON lines to append to (default {DEFAULT_RUNS})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    if profile:
        parser.add_argument("--profile-dir", type=Path,
                            help="run kcore under cProfile and keep one .prof per broker start here")
    parser.add_argument("--idle-timeout", type=float, default=60.0, metavar="S",
                        help="before each broker starts, wait up to S seconds for the machine to be idle "
                             "(load, disk writes; default 60; 0: no wait); the page cache is dropped anyway")


def run(args) -> int:
    return args.run(args)


def _load_workloads(names: list[str], changes: list[str]) -> list:
    from kcore.bench.workload import load
    pairs = dict(_pair(item) for item in changes)
    return [load(name).with_changes(**pairs) for name in names]


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise SystemExit(f"kcore bench: expected KEY=VALUE, got {item!r}")
    return key.strip(), value.strip()


def _workloads(args) -> int:
    from kcore.bench.workload import load, workload_dirs
    seen = set()
    for directory in workload_dirs():
        for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
            if path.stem in seen:
                continue
            seen.add(path.stem)
            w = load(str(path))
            rate = "max" if w.max_rate else f"{w.rate}/s for {w.duration_s:g}s"
            print(f"{w.name:45} {w.partitions:4}p {w.message_bytes:6}B {w.payload:12} {w.codec:6} "
                  f"{w.producers}p{w.consumers}c {rate}{_broker_side(w)}")
    return 0


def _broker_side(w) -> str:
    parts = [f"{w.brokers} brokers RF {w.replication_factor} acks={w.acks}"] if w.brokers > 1 else []
    parts += [w.security] if w.security != "PLAINTEXT" else []
    parts += [f"transactions of {w.transaction_messages}"] if w.transaction_messages else []
    return "".join(f", {part}" for part in parts)


def _run(args) -> int:
    from kcore.bench.brokers import Setup
    from kcore.bench.sweeps import Config, Sweep
    workloads = _load_workloads(args.workloads, args.set)
    overrides = tuple(_pair(item) for item in args.broker_config)
    label = args.target + "".join(f" {k}={v}" for k, v in overrides)
    config = Config(label, args.target, Setup(name=label, overrides=overrides))
    return _execute(Sweep("run", [config], workloads, Path(args.out), args.rounds,
                          not args.no_progress, args.profile_dir, _settler(args)))


def _sweep(args) -> int:
    from kcore.bench.sweeps import SWEEPS, Sweep
    if args.name not in SWEEPS:
        print(f"kcore bench: unknown sweep {args.name!r}; one of {', '.join(SWEEPS)}", file=sys.stderr)
        return 2
    configs = SWEEPS[args.name]()
    if args.only:
        keep = {label.strip() for label in args.only.split(",")}
        configs = [c for c in configs if c.label in keep]
    workloads = _load_workloads(args.workload, args.set)
    return _execute(Sweep(args.name, configs, workloads, Path(args.out), args.rounds,
                          not args.no_progress, args.profile_dir, _settler(args)))


def _settler(args):
    from kcore.bench.idle import IdleRule, Settler
    return Settler(IdleRule(timeout_s=args.idle_timeout))


def _compare(args) -> int:
    from kcore.bench import builds, compare
    from kcore.bench.brokers import cache_dir
    repo = args.repo or builds.CHECKOUT_ROOT
    builds_dir = args.builds_dir or cache_dir() / "builds"
    mode = "reuse-venv" if args.reuse_venv else "venv"

    def say(text: str) -> None:
        print(f"kcore bench compare: {text}", file=sys.stderr)
    try:
        pair = {"A": builds.build(repo, args.ref, "A", builds_dir, mode, args.rebuild, say)}
        pair["B"] = builds.build(repo, args.against, "B", builds_dir, mode, args.rebuild, say) \
            if args.against else builds.checkout("B")
    except builds.BuildError as error:
        print(f"kcore bench compare: {error}", file=sys.stderr)
        return 2
    workloads = _load_workloads(args.workload or list(compare.STANDARD_WORKLOADS), args.set)
    records = compare.run(pair, workloads, Path(args.out), args.rounds, not args.no_progress, _settler(args))
    print("\n".join(compare.summary(records, pair)))
    print(f"{len(records)} runs appended to {args.out}", file=sys.stderr)
    return 1 if any(r["status"] == "failed" for r in records) else 0


def _execute(sweep) -> int:
    records = sweep.run()
    failed = 0
    for record in records:
        metrics = record["metrics"]
        figures = ", ".join(f"{key}={metrics[key]:.4g}" for key in
                            ("produce_mb_s", "consume_mb_s", "latency_p50_ms", "latency_p99_ms",
                             "compression_ratio") if key in metrics)
        print(f"{record['config']:28} {record['workload']['name']:40} {record['status']:7} "
              f"{figures or record['reason']}", file=sys.stderr)
        failed += record["status"] == "failed"
    print(f"{len(records)} runs appended to {sweep.out}", file=sys.stderr)
    return 1 if failed else 0


def _profile(args) -> int:
    from kcore.bench.profile import profile_workloads
    for path in profile_workloads(_load_workloads(args.workloads, args.set), Path(args.out),
                                  not args.no_progress):
        print(path)
    return 0


def _report(args) -> int:
    from kcore.bench.report import build_report
    notes = Path(args.notes).read_text() if args.notes else ""
    written = build_report([Path(p) for p in args.runs], Path(args.out), notes=notes)
    for path in written:
        print(path)
    return 0

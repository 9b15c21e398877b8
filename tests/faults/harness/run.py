"""One round of the fault suite, and the long run.

A round: fresh topics, the three workloads (producers -> "queue" topic,
a consumer group reading it, transaction processors on a "txn" topic),
a quiet start, then the nemesis in cycles (fault for ``fault_s``, quiet
for ``quiet_s``) while a consumer and a processor are SIGKILLed now and
then, then healing, a bounded wait until every partition has its full
ISR, the end of the workloads, the audit read, and the checker. The
round's directory keeps history.jsonl (merged), result.json and the
client logs.

    python -m tests.faults.harness.run --minutes 2 --out faults-runs [--nemesis NAME ...] [--brokers 5]

runs every nemesis (or those named) for --minutes each against all the
workloads on one cluster and appends a line per round to
<out>/results.jsonl and per fault to <out>/failover.jsonl (seconds from
the fault to the first acknowledged acks=all write, on each affected
partition). `make faults MINUTES=N` runs it.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.faults.harness import nemesis as nemeses
from tests.faults.harness.checker import check
from tests.faults.harness.cluster import FaultCluster
from tests.faults.harness.history import OK, History, Op, pairs, write
from tests.faults.harness.workloads import ClientProcesses, ProducerWorkload, audit, merge

PARTITIONS = 3


@dataclass
class RoundConfig:
    cycles: int = 1
    fault_s: float = 6.0
    quiet_s: float = 3.0
    rate: float = 60.0                 # sends a second, per producer
    producers: int = 2
    consumers: int = 2
    processors: int = 2
    client_kill_every_s: float = 7.0
    # A transaction processor SIGKILLed halfway through each fault: its
    # successor must fence it and abort its open transaction while the
    # fault lasts (the path that left transactions hanging under disk-full).
    kill_processor_mid_fault: bool = True
    heal_timeout_s: float = 60.0
    message_timeout_ms: int = 30_000
    acks: str = "all"
    seed: int | None = None


def run_round(cluster: FaultCluster, nemesis: nemeses.Nemesis, directory: Path, config: RoundConfig) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(config.seed)
    tag = nemesis.name.replace("-", "")[:12] + str(rng.randrange(10**6))
    queue, txn = f"queue-{tag}", f"txn-{tag}"
    cluster.create_topic(queue, PARTITIONS, 3, {"flush.messages": "1"})
    cluster.create_topic(txn, PARTITIONS, 3)
    topics = {queue: PARTITIONS, txn: PARTITIONS}
    history = History(directory / "runner.jsonl")
    budget = config.cycles * (config.fault_s + config.quiet_s) + config.heal_timeout_s + 60
    producers = ProducerWorkload(history, cluster.bootstrap, queue, PARTITIONS, config.producers, config.rate,
                                 budget, config.message_timeout_ms, config.acks).start()
    consumers = ClientProcesses("consumer", config.consumers, history, directory, cluster.bootstrap, queue,
                                f"group-{tag}", budget).start()
    processors = ClientProcesses("processor", config.processors, history, directory, cluster.bootstrap, txn,
                                 f"eos-{tag}", budget).start()
    chaos = _ClientChaos(history, [consumers, processors], config.client_kill_every_s, rng)
    faults = 0
    try:
        _wait_for_acks(history, 20.0)
        time.sleep(config.quiet_s)
        chaos.start()
        for _ in range(config.cycles):
            faults += _one_fault(cluster, nemesis, history, topics, rng, config,
                                 processors if config.kill_processor_mid_fault else None)
            time.sleep(config.quiet_s)
        chaos.stop()
        healed = _heal(cluster, topics, config.heal_timeout_s)
        time.sleep(config.quiet_s)      # consumers catch up with what was written last
    finally:
        chaos.stop()
        producers.stop()
        consumers.stop()
        processors.stop()
    audit(history, cluster.bootstrap, topics)
    history.close()
    ops = merge(history, consumers.files + processors.files)
    write(directory / "history.jsonl", ops)
    result = check(ops)
    failovers = failover_times(ops)
    summary = {"nemesis": nemesis.name, "directory": str(directory), "healed": healed, "faults": faults,
               **result.summary(), "failover": failovers, "config": asdict(config)}
    (directory / "result.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def _one_fault(cluster, nemesis, history, topics, rng, config, processors=None) -> int:
    leaders = {f"{t}:{p}": m.leader for t in topics for p, m in cluster.partitions(t).items()}
    context = nemeses.Context(leaders, cluster.controller(), rng)
    invocation = history.invoke("nemesis", nemesis.name, None)
    try:
        try:
            done = nemesis.start(cluster, context)
        except Exception as exc:    # the fault could not be made: say so, undo what was done
            history.complete(invocation, "fail", {"error": repr(exc)})
            return 0
        affected = sorted(k for k, leader in leaders.items() if leader in done.get("affected", [])) or sorted(leaders)
        history.complete(invocation, OK, done, affected_keys=affected)
        if processors is None:
            time.sleep(config.fault_s)
        else:
            time.sleep(config.fault_s / 2)
            kill = history.invoke("nemesis", "kill-client", None)
            history.complete(kill, OK, {"killed": processors.kill(rng.randrange(len(processors.processes)))})
            time.sleep(config.fault_s / 2)
    finally:
        stop = history.invoke("nemesis", f"undo-{nemesis.name}", None)
        nemesis.stop(cluster)
        history.complete(stop, OK)
    return 1


def _heal(cluster: FaultCluster, topics: dict[str, int], timeout: float) -> bool:
    try:
        cluster.wait_healthy(topics, timeout)
        return True
    except AssertionError:
        return False


def _wait_for_acks(history: History, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(op["f"] == "send" and op["type"] == OK for op in history.ops[-200:]):
            return
        time.sleep(0.2)
    raise AssertionError(f"no acknowledged write within {timeout:g}s of the start")


class _ClientChaos:
    """SIGKILLs a random consumer or processor every ``every_s`` seconds."""

    def __init__(self, history: History, groups: list[ClientProcesses], every_s: float, rng: random.Random):
        self.history, self.groups, self.every_s, self.rng = history, groups, every_s, rng
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="client-chaos")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(10)

    def _run(self) -> None:
        while not self.stopping.wait(self.every_s):
            group = self.rng.choice(self.groups)
            slot = self.rng.randrange(len(group.processes))
            invocation = self.history.invoke("nemesis", "kill-client", None)
            self.history.complete(invocation, OK, {"killed": group.kill(slot)})


def failover_times(ops: list[Op]) -> list[dict]:
    """Per fault: seconds from its start to the first acknowledged write,
    among writes invoked after the start, on each affected partition; the
    fault's figure is the largest (when all have one). A key with none
    before the end counts as null (never recovered in the history)."""
    sends = [(inv, comp) for inv, comp in pairs(ops) if inv["f"] == "send" and comp is not None
             and comp["type"] == OK]
    found = []
    for op in ops:
        if op["process"] != "nemesis" or op["type"] != OK or "affected_keys" not in op:
            continue
        start = op["time"]
        firsts = {}
        for key_ in op["affected_keys"]:
            times = [comp["time"] for inv, comp in sends
                     if inv["time"] >= start and inv["value"][0][1] == key_]
            if key_.startswith("queue-"):
                firsts[key_] = round(min(times) - start, 3) if times else None
        values = list(firsts.values())
        found.append({"nemesis": op["f"], "time": start, "targets": op["value"].get("targets"),
                      "per_partition": firsts,
                      "failover_s": None if not values or None in values else max(values)})
    return found


def summarize_failovers(rows: list[dict]) -> dict:
    values = [r["failover_s"] for r in rows if r["failover_s"] is not None]
    return {"faults": len(rows), "recovered": len(values),
            "median_s": round(statistics.median(values), 3) if values else None,
            "max_s": max(values) if values else None}


def markdown(out: Path) -> str:
    """The long run's figures as the tables of docs/faults.md: per nemesis,
    operations, faults, anomalies and failover (median / max seconds)."""
    rounds = [json.loads(line) for line in open(out / "results.jsonl")]
    failovers = [json.loads(line) for line in open(out / "failover.jsonl")]
    lines = ["| nemesis | brokers | operations | acknowledged writes | reads | faults | client kills "
             "| violations | allowed (G0) | failover median / max s (recovered / faults) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for summary in rounds:
        stats = summary["stats"]
        rows = [r for r in failovers if r["nemesis"] == summary["nemesis"] and r["brokers"] == summary.get("brokers")]
        figures = summarize_failovers(rows)
        violations = ", ".join(f"{k} {v}" for k, v in summary["violations"].items()) or "0"
        lines.append(f"| {summary['nemesis']} | {summary.get('brokers')} | {stats['operations']} "
                     f"| {stats['acknowledged_writes']} | {stats['reads']} | {stats['faults']} "
                     f"| {stats['client_kills']} | {violations} | {summary['allowed'].get('G0', 0)} "
                     f"| {figures['median_s']} / {figures['max_s']} ({figures['recovered']} / {figures['faults']}) |")
    return "\n".join(lines)


def _long_round(cluster: FaultCluster, name: str, args, config: RoundConfig) -> dict:
    """One nemesis for the long run; its lines appended to the out files."""
    started = time.monotonic()
    summary = run_round(cluster, nemeses.BY_NAME[name](), args.out / name, config)
    summary.update(brokers=args.brokers, acks=args.acks, unclean=args.unclean,
                   wall_s=round(time.monotonic() - started, 1))
    with open(args.out / "results.jsonl", "a") as handle:
        handle.write(json.dumps({k: v for k, v in summary.items() if k != "examples"}) + "\n")
    with open(args.out / "failover.jsonl", "a") as handle:
        for row in summary["failover"]:
            handle.write(json.dumps({**row, "brokers": args.brokers}) + "\n")
    print(f"{name}: valid={summary['valid']} violations={summary['violations']} "
          f"allowed={summary['allowed']} ops={summary['stats']['operations']} "
          f"faults={summary['faults']} healed={summary['healed']} "
          f"failover={summarize_failovers(summary['failover'])}", flush=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2.0, help="per nemesis")
    parser.add_argument("--nemesis", action="append", choices=sorted(nemeses.BY_NAME), help="default: all")
    parser.add_argument("--brokers", type=int, default=3, choices=(3, 5))
    parser.add_argument("--fault-s", type=float, default=15.0)
    parser.add_argument("--quiet-s", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("faults-runs"))
    parser.add_argument("--markdown", action="store_true", help="print the tables of --out's figures and stop")
    parser.add_argument("--acks", default="all", choices=("all", "1"),
                        help="the producers' acks (1: to see what it loses)")
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep the cluster's broker and ZooKeeper logs under --out/cluster")
    parser.add_argument("--unclean", action="store_true",
                        help="unclean.leader.election.enable=true (to see what it loses)")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(args.out))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.nemesis or [n.name for n in nemeses.ALL]
    cycles = max(1, int(args.minutes * 60 // (args.fault_s + args.quiet_s)))
    failures = 0
    # SIGTERM unwinds like an exception, so every namespace, mount and
    # process goes with the context managers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    overrides = {"unclean.leader.election.enable": "true"} if args.unclean else None
    with tempfile.TemporaryDirectory(prefix="kcore-faults-") as scratch, contextlib.ExitStack() as stack:
        base = args.out.resolve() if args.keep_logs else Path(scratch)
        clusters = 0
        cluster = None
        for name in names:
            if cluster is None:     # the first round, or the last one left it unhealed
                clusters += 1
                cluster = stack.enter_context(FaultCluster(base / f"cluster-{clusters}", args.brokers, overrides))
            config = RoundConfig(cycles=cycles, fault_s=args.fault_s, quiet_s=args.quiet_s,
                                 message_timeout_ms=int((args.fault_s + 30) * 1000), acks=args.acks)
            summary = _long_round(cluster, name, args, config)
            failures += not summary["valid"]
            if not summary["healed"]:
                print(f"{name}: the cluster did not heal within the wait; the next round gets a new one",
                      flush=True)
                cluster.close()
                cluster = None
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

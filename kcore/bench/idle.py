"""Between two brokers' rounds: write back, drop the page cache, and wait
until the machine is idle, so that one broker's leftover work is not
measured in the next one's round.

Measured interleaved with noida-db, kcore's produce fell from 566-605 to
182-225 MB/s and its p99 rose from 3 to 40-130 ms in the rounds that
followed noida-db's: the peer was stopped, but gigabytes of its snapshot
were still being written back (docs/performance.md#how-we-measure).

``settle``:

1. ``sync``, then (as root) ``echo 3 > /proc/sys/vm/drop_caches``: the
   next round starts with nothing of the last one in memory or in
   write-back. Without root only the sync happens, with a warning.
2. Waits until the load and the disk writes are low for ``settled``
   consecutive windows of ``window_s``, or ``timeout_s`` passed (then a
   warning, and the round goes on: a shared machine may never be idle).
   The load is the number of runnable threads (``/proc/loadavg``'s fourth
   field, this process's own thread taken off) averaged over the window:
   the load average's quantity over one second instead of one minute,
   which would need minutes to forget a round. Disk writes are the sectors
   written of the whole disks in ``/proc/diskstats`` (partitions, loop and
   device-mapper devices would count the same bytes twice).

On a machine that other work keeps busy, "idle" means "no busier than
before the sweep's first broker started" (``Ambient``): waiting for a
load that other users hold up would only time out, round after round.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

SECTOR_BYTES = 512
SAMPLES_PER_WINDOW = 10
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclasses.dataclass(frozen=True)
class IdleRule:
    """When the machine counts as idle. ``load`` in runnable threads (the
    load average's unit; default half the cores), ``write_mb_s`` in 10^6
    bytes/s; ``timeout_s`` 0 skips the wait (sync and drop still happen)."""
    timeout_s: float = 60.0
    load: float = max(1.0, (os.cpu_count() or 2) / 2)
    write_mb_s: float = 10.0
    window_s: float = 1.0
    settled: int = 2


@dataclasses.dataclass(frozen=True)
class Sample:
    """One window: mean runnable threads, disk writes, the 1-min load average."""
    load: float
    write_mb_s: float
    load_avg_1m: float

    def to_dict(self) -> dict:
        return {key: round(value, 2) for key, value in dataclasses.asdict(self).items()}


def _running_threads() -> int:
    # "0.52 0.58 0.59 3/567 12345": the fourth field is running/total.
    fields = Path("/proc/loadavg").read_text().split()
    return max(0, int(fields[3].split("/")[0]) - 1)  # less the thread reading it


def _disk_names() -> set[str]:
    block = Path("/sys/block")
    return {path.name for path in block.iterdir() if (path / "device").exists()} if block.is_dir() else set()


def disk_written_bytes(disks: set[str] | None = None) -> int:
    """Bytes written so far to the whole disks (``/proc/diskstats``)."""
    disks = _disk_names() if disks is None else disks
    total = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        if len(fields) > 9 and fields[2] in disks:
            total += int(fields[9]) * SECTOR_BYTES
    return total


def sample(window_s: float) -> Sample:
    """The load and the disk writes over the next ``window_s`` seconds."""
    disks = _disk_names()
    written = disk_written_bytes(disks)
    start = time.monotonic()
    running = []
    for index in range(SAMPLES_PER_WINDOW):
        running.append(_running_threads())
        time.sleep(max(0.0, start + (index + 1) * window_s / SAMPLES_PER_WINDOW - time.monotonic()))
    elapsed = max(time.monotonic() - start, 1e-6)
    return Sample(load=sum(running) / len(running),
                  write_mb_s=(disk_written_bytes(disks) - written) / elapsed / 1e6,
                  load_avg_1m=os.getloadavg()[0])


@dataclasses.dataclass(frozen=True)
class Ambient:
    """The machine before the sweep's first broker: the floor of "idle"."""
    load: float
    write_mb_s: float

    @classmethod
    def measure(cls, windows: int = 3, window_s: float = 1.0) -> Ambient:
        """The least seen over a few windows: what others keep up all the
        time, not a burst (a neighbour's 150 MB/s for a second was seen to
        set the write limit of a whole sweep)."""
        seen = [sample(window_s) for _ in range(windows)]
        return cls(min(s.load for s in seen), min(s.write_mb_s for s in seen))

    def limits(self, rule: IdleRule) -> tuple[float, float]:
        """(load, MB/s) below which the machine is idle: the rule's, or
        what others kept up before the sweep with a margin, whichever is higher."""
        return max(rule.load, self.load * 1.25 + 0.5), max(rule.write_mb_s, self.write_mb_s * 1.5 + 1.0)


def drop_page_cache() -> bool:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``; False where not root."""
    os.sync()
    if os.geteuid() != 0:
        return False
    try:
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


class Settler:
    """Runs the steps of ``settle`` before each broker start of a sweep and
    warns once per reason. Not thread-safe: the sweep's thread owns it."""

    def __init__(self, rule: IdleRule | None = None, ambient: Ambient | None = None):
        self.rule = rule or IdleRule()
        self.ambient = ambient
        self._warned: set[str] = set()

    def _warn(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(f"kcore bench: {text}", file=sys.stderr)

    def begin(self) -> None:
        """Measure the ambient load before any broker of the sweep starts."""
        if self.ambient is None and self.rule.timeout_s > 0:
            self.ambient = Ambient.measure()
            load, write = self.ambient.limits(self.rule)
            if load > self.rule.load or write > self.rule.write_mb_s:
                self._warn("ambient", f"the machine was busy before the first round (load {self.ambient.load:.1f}, "
                                      f"{self.ambient.write_mb_s:.1f} MB/s written): rounds wait until load "
                                      f"<= {load:.1f} and writes <= {write:.1f} MB/s")

    def settle(self) -> dict:
        """Write back, drop the page cache, wait for idle: what was done and seen."""
        start = time.monotonic()
        dropped = drop_page_cache()
        if not dropped:
            self._warn("root", "not root: the page cache is not dropped between rounds (sync only)")
        outcome = {"page_cache_dropped": dropped, "sync_s": round(time.monotonic() - start, 1),
                   "idle": True, "waited_s": 0.0}
        if self.rule.timeout_s <= 0:
            return outcome
        start = time.monotonic()
        load_limit, write_limit = (self.ambient or Ambient(0.0, 0.0)).limits(self.rule)
        calm = 0
        seen = sample(self.rule.window_s)
        while True:
            calm = calm + 1 if seen.load <= load_limit and seen.write_mb_s <= write_limit else 0
            if calm >= self.rule.settled:
                break
            if time.monotonic() - start >= self.rule.timeout_s:
                outcome["idle"] = False
                self._warn("timeout", f"the machine was not idle within {self.rule.timeout_s:g}s "
                                      f"(load {seen.load:.1f}, {seen.write_mb_s:.1f} MB/s written): "
                                      "went on; each record's settle field says so")
                break
            seen = sample(self.rule.window_s)
        outcome.update(seen.to_dict(), waited_s=round(time.monotonic() - start, 1),
                       load_limit=round(load_limit, 2), write_limit_mb_s=round(write_limit, 2))
        return outcome

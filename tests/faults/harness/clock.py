"""The broker-side half of the clock, fsync and read-only nemeses: shim.c compiled
into a preload library, and the control file each broker maps.

A broker started with `environment(control)` reads its wall clock through
the shim; `Control` shifts it (a jump), skews its rate (drift) or slows
its fsyncs, at once, without restarting it. Brokers sync through threads
(KCORE_SYNCER=thread) so that their fdatasync calls pass through the
shim; io_uring's would not.
"""
from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import time
from pathlib import Path

SOURCE = Path(__file__).with_name("shim.c")
LAYOUT = struct.Struct("<5q")


def build(directory: Path) -> Path:
    """Compile the shim once per source version into ``directory``."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    library = Path(directory) / f"kcore-faults-shim-{digest}.so"
    if not library.exists():
        library.parent.mkdir(parents=True, exist_ok=True)
        partial = library.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(partial), str(SOURCE),
                        "-ldl", "-lpthread"], check=True, capture_output=True)
        partial.rename(library)
    return library


class Control:
    """One broker's control file (see shim.c)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.offset_ns = self.drift_ppm = self.drift_base_ns = self.fsync_delay_us = self.read_only = 0
        self._write()

    def _write(self) -> None:
        with open(self.path, "r+b" if self.path.exists() else "wb") as handle:
            handle.write(LAYOUT.pack(self.offset_ns, self.drift_ppm, self.drift_base_ns, self.fsync_delay_us,
                                     self.read_only))

    def jump(self, seconds: float) -> None:
        self.offset_ns += int(seconds * 1e9)
        self._write()

    def drift(self, ppm: int) -> None:
        """From now, the wall clock runs (1 + ppm / 1e6) times as fast."""
        now = time.time_ns()
        if self.drift_ppm:
            self.offset_ns += int((now - self.drift_base_ns) * self.drift_ppm / 1e6)
        self.drift_ppm, self.drift_base_ns = ppm, now
        self._write()

    def slow_fsync(self, delay_s: float) -> None:
        self.fsync_delay_us = int(delay_s * 1e6)
        self._write()

    def set_read_only(self, read_only: bool) -> None:
        """The broker's log dir read-only (EROFS) or writable again."""
        self.read_only = int(read_only)
        self._write()

    def reset(self) -> None:
        self.offset_ns = self.drift_ppm = self.drift_base_ns = self.fsync_delay_us = self.read_only = 0
        self._write()


def environment(library: Path, control: Control, data_dir: Path) -> dict[str, str]:
    return {"LD_PRELOAD": str(library), "KCORE_FAULTS_CONTROL": str(control.path),
            "KCORE_FAULTS_DATA_DIR": str(data_dir), "KCORE_SYNCER": "thread"}

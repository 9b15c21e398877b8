"""A small tmpfs to run out of space on (needs root; tests skip without it)."""
from __future__ import annotations

import errno
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(path: Path, size: str, read_only: bool = False):
    """Mount a tmpfs of ``size`` (e.g. "8m") at ``path``; skip the test if
    this user may not mount."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                              capture_output=True, text=True)
    except OSError as exc:
        pytest.skip(f"cannot run mount here: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path, leave_bytes: int) -> Path:
    """Write a filler file until at most ``leave_bytes`` remain free."""
    filler = directory / "filler"
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    chunk = bytes(1 << 16)
    remaining = max(0, free - leave_bytes)
    try:
        # A broker writing meanwhile may fill it first: even the open can
        # meet a full file system, which is what was asked for.
        with open(filler, "wb") as f:
            while remaining > 0:
                remaining -= f.write(chunk[:min(len(chunk), remaining)])
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    return filler

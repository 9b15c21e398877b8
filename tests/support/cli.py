"""The kcore CLI as a subprocess of the tests' interpreter."""
from __future__ import annotations

import subprocess
import sys

CLI_TIMEOUT_S = 60.0


def kcore_cli(*args: str, stdin: str | None = None, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`kcore ARGS`, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "kcore.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout)

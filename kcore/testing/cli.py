"""The `kcore` command line of this interpreter, as a subprocess."""
from __future__ import annotations

import subprocess
import sys

CLI_TIMEOUT_S = 60.0


def kcore_command(*args: str) -> list[str]:
    """The argv of `kcore ARGS` run by this interpreter (`python -m kcore`),
    for callers that start it with Popen."""
    return [sys.executable, "-m", "kcore", *args]


def kcore_cli(*args: str, stdin: str | bytes | None = None, timeout: float = CLI_TIMEOUT_S,
              text: bool = True) -> subprocess.CompletedProcess:
    """`kcore ARGS`, its output captured: text, or bytes with ``text=False``
    (then ``stdin`` is bytes too)."""
    return subprocess.run(kcore_command(*args), input=stdin, capture_output=True, text=text,
                          timeout=timeout)

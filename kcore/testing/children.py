"""Child processes that do not outlive whoever started them.

A broker or ZooKeeper started for a test is a child of the test process.
If that process is killed (SIGKILL, an OOM kill, a CI timeout) its
fixtures never run their teardown, and without help the children would
keep their ports, their data directories and a core each. On Linux the
kernel can send the child a signal when its parent dies
(``PR_SET_PDEATHSIG``); a broker stops cleanly on SIGTERM.
"""
from __future__ import annotations

import ctypes
import signal
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(death_signal: int = signal.SIGTERM) -> None:
    """In the child, before exec: have the kernel send ``death_signal``
    when the parent dies. A no-op where prctl is missing (not Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def parent_death_hook() -> Callable[[], None] | None:
    """The ``preexec_fn`` for a child that must stop when this process
    dies, or None when called off the main thread.

    The kernel's "parent" is the thread that forked: a child started from
    a worker thread would get the signal when that thread ends, long
    before the process does. Children started there keep running until
    they are stopped, as before."""
    if threading.current_thread() is threading.main_thread():
        return die_with_parent
    return None

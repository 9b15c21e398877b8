"""The process's open-file limit: raised at start, checked against the logs.

A broker holds one descriptor per segment it serves (the ``.log``; index
files are mapped without one, log/index_file.py) plus one per connection.
A soft RLIMIT_NOFILE of 1,024, many distributions' default, is exhausted
by 1,000 partitions, and the failure comes later, as EMFILE on a roll or
an accept. So the broker raises its soft limit to the hard limit (no
privilege needed) before opening any log, and after loading them warns,
naming the numbers, when what it holds leaves too little room.
"""
from __future__ import annotations

import logging
import resource
from collections.abc import Iterable

from kcore.log.log import Log

log = logging.getLogger(__name__)

# Room kept beyond the descriptors held at start: one more segment per
# partition (each rolls in time) and this many connections and files.
CONNECTION_ROOM = 1024


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft
    limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("cannot raise the open file limit from %d to %d: %s", soft, hard, exc)
        return soft
    return hard


def check_open_file_room(limit: int, logs: Iterable[Log]) -> str | None:
    """Warn (and return the warning) when ``limit`` leaves too little room
    beyond the descriptors ``logs`` hold; None when it does not."""
    partitions = segments = 0
    for item in logs:
        partitions += 1
        segments += len(item.segments)
    needed = segments + partitions + CONNECTION_ROOM
    if limit == resource.RLIM_INFINITY or limit >= needed:
        return None
    warning = (f"the open file limit (RLIMIT_NOFILE) is {limit}, too low for {partitions} "
               f"partitions: their logs hold {segments} descriptors (one per segment) and need "
               f"{needed} with room for a roll each and {CONNECTION_ROOM} connections; raise the "
               f"hard limit (ulimit -Hn, systemd LimitNOFILE=) to at least {needed}")
    log.warning("%s", warning)
    return warning

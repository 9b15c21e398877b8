"""The TCP connections brokers hold, as the kernel lists them: ss(8) from
iproute2 (Makefile system-deps), run as root to see every process's
sockets. A connection is known by its socket's inode, which no later
socket reuses while the test runs, unlike an ephemeral port."""
from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

# "0  0  127.0.0.1:48886  127.0.0.1:20535 users:(("python",pid=5217,fd=23)) ino:290162 ..."
_LINE = re.compile(r"\S+:(\d+)\s+\S+:(\d+)\s+users:\((.*?)\)\s.*?\bino:(\d+)")
_PID = re.compile(r"pid=(\d+)")


@dataclass(frozen=True)
class Connection:
    """One end of an established connection: the process holding it, its
    own port and the port it is connected to."""
    inode: int
    pid: int
    local_port: int
    peer_port: int


def established(pids: Iterable[int], peer_ports: Iterable[int]) -> set[Connection]:
    """The established TCP connections that processes ``pids`` hold to
    any of ``peer_ports``: the client ends of their connections to those
    listeners."""
    wanted_pids, wanted_ports = set(pids), set(peer_ports)
    listed = subprocess.run(["ss", "-tnpeH", "state", "established"], capture_output=True,
                            text=True, check=True, timeout=30).stdout
    found = set()
    for line in listed.splitlines():
        match = _LINE.search(line)
        if match is None:
            continue
        local_port, peer_port, users, inode = match.groups()
        if int(peer_port) not in wanted_ports:
            continue
        for pid in map(int, _PID.findall(users)):
            if pid in wanted_pids:
                found.add(Connection(int(inode), pid, int(local_port), int(peer_port)))
    return found

"""Test hosts in network namespaces, and the cuts between them.

Each host is a namespace ``kcf<pid>-<name>`` with one veth (``eth0``)
whose peer is a port of a bridge (``br0``) in a namespace of its own
(``kcf<pid>-hub``); the root namespace, where the clients run, has one
more veth on that bridge (``kcf<pid>``), so it reaches every host. The
addresses are one /24 of 198.18.0.0/15 (RFC 2544's range for test
benches), free on this machine: hosts have no other route, so nothing
leaves the bridge. In the root namespace a blackhole route for the whole
/15 at metric 4000 catches what the /24 of a live bridge does not: a
client still retrying a host after its network is gone must never reach
the default route (seen without it: a connection to a removed host's
address answered by whatever sits behind the default gateway). It stays
until the last process using these networks exits.

Links are cut with blackhole routes: host A gets ``blackhole B/32`` and B
gets ``blackhole A/32``, both directions. Established TCP connections
then lose every segment until the routes go (retransmits wait, as behind
a dropped link); new connections fail at once. `tc netem` and packet
filters are absent from this kernel and image, and routes are enough for
every partition the nemeses make: one node isolated, majority/minority,
one host cut from a chosen set, a bridge (two halves that both reach one
node). Everything is removed by close(), and a run that died leaves
namespaces whose owner pid is gone: cleanup_leftovers() removes those.
"""
from __future__ import annotations

import atexit
import ipaddress
import os
import re
import signal
import subprocess
from dataclasses import dataclass

PREFIX = "kcf"
SAFETY_METRIC = 4000
RANGE = ipaddress.ip_network("198.18.0.0/15")
CLIENT = "client"


class NetworkError(RuntimeError):
    pass


def ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def namespaces_supported() -> str | None:
    """None where this process can build namespaces, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{PREFIX}probe{os.getpid()}"
    try:
        ip("netns", "add", probe)
    except (NetworkError, FileNotFoundError) as exc:
        return f"cannot create a network namespace here: {exc}"
    ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    namespace: str | None      # None: the root namespace (the clients)

    @property
    def prefix(self) -> tuple[str, ...]:
        """What runs a command inside this host."""
        return ("ip", "netns", "exec", self.namespace) if self.namespace else ()


class Network:
    """A bridge and its hosts; cut()/heal() change what reaches what.
    Not thread-safe: one nemesis at a time drives it."""

    def __init__(self, tag: str | None = None):
        self.tag = tag or f"{PREFIX}{os.getpid()}"
        self.hub = f"{self.tag}-hub"
        self.subnet = _free_subnet()
        self._addresses = self.subnet.hosts()
        gateway = str(next(self._addresses))
        self.hosts: dict[str, Host] = {CLIENT: Host(CLIENT, gateway, None)}
        self.cuts: set[frozenset[str]] = set()
        self._built = False

    def __enter__(self) -> Network:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _build(self) -> None:
        ensure_safety_route()
        self._built = True
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "link", "set", "br0", "up")
        ip("link", "add", self.tag, "type", "veth", "peer", "name", CLIENT, "netns", self.hub)
        ip("-n", self.hub, "link", "set", CLIENT, "master", "br0", "up")
        ip("addr", "add", f"{self.hosts[CLIENT].address}/{self.subnet.prefixlen}", "dev", self.tag)
        ip("link", "set", self.tag, "up")

    def add_host(self, name: str) -> Host:
        """A new namespace on the bridge, with the next address."""
        assert name not in self.hosts and len(name) <= 6, name
        host = Host(name, str(next(self._addresses)), f"{self.tag}-{name}")
        ip("netns", "add", host.namespace)
        self.hosts[name] = host
        ip("-n", host.namespace, "link", "set", "lo", "up")
        ip("-n", host.namespace, "link", "add", "eth0", "type", "veth", "peer", "name", name, "netns", self.hub)
        ip("-n", self.hub, "link", "set", name, "master", "br0", "up")
        ip("-n", host.namespace, "addr", "add", f"{host.address}/{self.subnet.prefixlen}", "dev", "eth0")
        ip("-n", host.namespace, "link", "set", "eth0", "up")
        return host

    # -- cuts --------------------------------------------------------------------------------
    def cut(self, a: str, b: str) -> None:
        pair = frozenset((a, b))
        if a == b or pair in self.cuts:
            return
        self.cuts.add(pair)
        self._route("add", a, b)
        self._route("add", b, a)

    def _route(self, verb: str, at: str, to: str) -> None:
        host = self.hosts[at]
        args = ("-n", host.namespace) if host.namespace else ()
        ip(*args, "route", verb, "blackhole", f"{self.hosts[to].address}/32", check=verb == "add")

    def partition(self, *components: set[str]) -> None:
        """Cut every pair of hosts in different components; hosts named
        in none keep every link."""
        for i, left in enumerate(components):
            for right in components[i + 1:]:
                for a in left:
                    for b in right:
                        if a not in right and b not in left:
                            self.cut(a, b)

    def isolate(self, name: str, include_client: bool = False) -> None:
        for other in self.hosts:
            if other != name and (include_client or other != CLIENT):
                self.cut(name, other)

    def heal(self) -> None:
        for pair in list(self.cuts):
            a, b = sorted(pair)
            self._route("del", a, b)
            self._route("del", b, a)
            self.cuts.discard(pair)

    def reaches(self, a: str, b: str) -> bool:
        return frozenset((a, b)) not in self.cuts

    # -- teardown ----------------------------------------------------------------------------
    def close(self) -> None:
        """Remove every namespace (killing what still runs in it) and the
        root veth. Safe to call twice."""
        if not self._built:
            return
        self._built = False
        for host in self.hosts.values():
            if host.namespace:
                _remove_namespace(host.namespace)
        _remove_namespace(self.hub)
        ip("link", "del", self.tag, check=False)


def _remove_namespace(name: str) -> None:
    for pid in ip("netns", "pids", name, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    ip("netns", "del", name, check=False)


def _free_subnet() -> ipaddress.IPv4Network:
    used = set()
    for line in ip("-4", "route", "show", "table", "all").splitlines():
        match = re.search(r"(198\.1[89]\.\d+)\.\d+", line)
        if match:
            used.add(match.group(1))
    for subnet in RANGE.subnets(new_prefix=24):
        if str(subnet.network_address).rsplit(".", 1)[0] not in used:
            return subnet
    raise NetworkError("no free /24 left in 198.18.0.0/15")


def cleanup_leftovers() -> list[str]:
    """Remove what runs whose process is gone left behind: namespaces
    named kcf<pid>-*, their root veth, their safety routes, and tmpfs
    mounts under a kcf<pid> directory. Returns what was removed."""
    removed = []
    live = {str(pid) for pid in _live_pids()}
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(rf"{PREFIX}(\d+)-\w+", name)
        if match and match.group(1) not in live:
            _remove_namespace(name)
            removed.append(name)
    for line in ip("-o", "link", "show", check=False).splitlines():
        match = re.search(rf"\d+: ({PREFIX}(\d+))[@:]", line)
        if match and match.group(2) not in live:
            ip("link", "del", match.group(1), check=False)
            removed.append(match.group(1))
    with open("/proc/mounts") as mounts:
        for line in mounts:
            point = line.split()[1]
            match = re.search(rf"/{PREFIX}(\d+)-", point)
            if match and match.group(1) not in live:
                subprocess.run(["umount", "-l", point], check=False)
                removed.append(point)
    return removed


def ensure_safety_route() -> None:
    ip("route", "replace", "blackhole", str(RANGE), "metric", str(SAFETY_METRIC))
    atexit.register(_remove_safety_route_if_unused)


def _remove_safety_route_if_unused() -> None:
    """At exit: drop the /15 blackhole unless another live process still
    has namespaces of its own."""
    live = {str(pid) for pid in _live_pids()} - {str(os.getpid())}
    for line in ip("netns", "list", check=False).splitlines():
        match = re.match(rf"{PREFIX}(\d+)-", line)
        if match and match.group(1) in live:
            return
    ip("route", "del", "blackhole", str(RANGE), "metric", str(SAFETY_METRIC), check=False)


def _live_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]

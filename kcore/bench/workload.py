"""Workloads: what the load generators do, read from TOML files.

A workload file (``kcore/bench/workloads/*.toml``, shipped in the package,
or one's own in ``./bench/workloads``) holds one table of the fields of
``Workload``; the names follow the OpenMessaging Benchmark's workload
files where they have one (``partitionsPerTopic`` -> ``partitions``,
``messageSize`` -> ``message_bytes``, ``producerRate`` -> ``rate``)::

    name = "1-topic-16-partitions-1kb"
    partitions = 16
    message_bytes = 1024
    payload = "half-random"
    rate = 50000          # msg/s over all producers; 0 = as fast as possible
    duration_s = 8        # rate-limited: how long to produce
    messages = 200000     # max rate: how many to produce, then consume

A max-rate workload produces ``messages`` as fast as the producers can,
then consumes them all back from offset 0 (produce and consume MB/s apart).
A rate-limited workload produces at ``rate`` for ``duration_s`` with the
consumers reading concurrently from the log end, and measures end-to-end
latency from the send time stamped at the start of each message.

What the broker side needs (kcore only; a peer that cannot do it is
skipped): ``brokers`` > 1 runs a cluster with a real ZooKeeper
(kcore.testing) and the topic gets ``replication_factor`` replicas and
``min_insync_replicas``; ``security`` is the listener's protocol
(kcore/bench/security.py); ``transaction_messages`` > 0 makes each
producer transactional, committing every that many messages, and the
consumers read_committed.
"""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from kcore.bench.payloads import KINDS
from kcore.bench.security import PROTOCOLS

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DURABILITY = ("page-cache", "fsync")


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    partitions: int = 16
    message_bytes: int = 1024
    payload: str = "half-random"
    producers: int = 1
    consumers: int = 1
    rate: int = 0
    duration_s: float = 8.0
    messages: int = 200_000
    acks: str = "1"
    codec: str = "none"
    linger_ms: int = 5
    batch_bytes: int = 1_000_000
    durability: str = "page-cache"
    brokers: int = 1
    replication_factor: int = 1
    min_insync_replicas: int = 1
    security: str = "PLAINTEXT"
    transaction_messages: int = 0
    description: str = ""

    def __post_init__(self) -> None:
        if self.payload not in KINDS:
            raise ValueError(f"{self.name}: payload {self.payload!r} is not one of {', '.join(KINDS)}")
        if self.codec not in CODECS:
            raise ValueError(f"{self.name}: codec {self.codec!r} is not one of {', '.join(CODECS)}")
        if self.durability not in DURABILITY:
            raise ValueError(f"{self.name}: durability {self.durability!r} is not one of {', '.join(DURABILITY)}")
        if self.acks not in ("0", "1", "all", "-1"):
            raise ValueError(f"{self.name}: acks {self.acks!r} is not 0, 1 or all")
        for field in ("partitions", "message_bytes", "producers", "consumers", "messages", "brokers",
                      "replication_factor", "min_insync_replicas"):
            if getattr(self, field) < 1:
                raise ValueError(f"{self.name}: {field} must be at least 1")
        self._check_broker_side()
        if self.rate < 0 or self.duration_s <= 0:
            raise ValueError(f"{self.name}: rate must be >= 0 and duration_s > 0")
        if self.consumers > self.partitions:
            raise ValueError(f"{self.name}: more consumers ({self.consumers}) than partitions")

    def _check_broker_side(self) -> None:
        if self.replication_factor > self.brokers:
            raise ValueError(f"{self.name}: replication_factor {self.replication_factor} "
                             f"needs as many brokers (brokers = {self.brokers})")
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(f"{self.name}: min_insync_replicas above replication_factor")
        if self.security not in PROTOCOLS:
            raise ValueError(f"{self.name}: security {self.security!r} is not one of {', '.join(PROTOCOLS)}")
        if self.transaction_messages < 0:
            raise ValueError(f"{self.name}: transaction_messages must be >= 0")
        # librdkafka refuses a transactional producer with acks other than all.
        if self.transaction_messages and self.acks not in ("all", "-1"):
            raise ValueError(f"{self.name}: transactions need acks = \"all\"")

    @property
    def broker_shape(self) -> tuple:
        """What the broker start depends on: workloads of one shape can
        share a broker, others need their own. The durability is a broker
        setting (log.flush.interval.messages), and the running broker
        carries the replication factor and min.insync.replicas its topics
        are created with: an RF 3 workload run after an RF 1 one on the
        same cluster measured an RF 1 topic."""
        return (self.brokers, self.security, self.durability, self.replication_factor,
                self.min_insync_replicas)

    @property
    def max_rate(self) -> bool:
        return self.rate == 0

    @property
    def total_messages(self) -> int:
        return self.messages if self.max_rate else int(self.rate * self.duration_s)

    def with_changes(self, **changes) -> Workload:
        """A copy with fields replaced (values from the command line may be strings)."""
        fields = {field.name: field.type for field in dataclasses.fields(self)}
        typed = {}
        for key, value in changes.items():
            if key not in fields:
                raise ValueError(f"unknown workload field {key!r}; fields: {', '.join(fields)}")
            current = getattr(self, key)
            typed[key] = type(current)(value) if isinstance(value, str) and not isinstance(current, str) \
                else value
        return dataclasses.replace(self, **typed)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# The workloads that ship with the package (package data, in the wheel).
PACKAGED_WORKLOADS = Path(__file__).resolve().parent / "workloads"


def workload_dirs() -> list[Path]:
    """Where workload names are looked up: ./bench/workloads (a user's own
    files, which win over a packaged one of the same name), then the
    packaged ones."""
    return [Path.cwd() / "bench" / "workloads", PACKAGED_WORKLOADS]


def load(name_or_path: str) -> Workload:
    """A workload from a TOML file path or a name in ``workload_dirs()``."""
    path = Path(name_or_path)
    if not path.suffix:
        for directory in workload_dirs():
            candidate = directory / f"{name_or_path}.toml"
            if candidate.is_file():
                path = candidate
                break
    if not path.is_file():
        known = sorted({p.stem for d in workload_dirs() if d.is_dir() for p in d.glob("*.toml")})
        raise FileNotFoundError(f"no workload {name_or_path!r}; known: {', '.join(known)}")
    with open(path, "rb") as handle:
        table = tomllib.load(handle)
    table.setdefault("name", path.stem)
    if "acks" in table:
        table["acks"] = str(table["acks"])
    return Workload(**table)

"""The stores of a node without ZooKeeper: files in a directory, beside
the node's metadata file (node_file.py).

A single node keeps them in its first log dir; the broker processes of a
multi-process node share the node's first log dir, so every file here is
changed under a lock or by an atomic rename and re-read when it changed.

- ACLs, client quotas and dynamic broker configs: fields ``acls``,
  ``client_quotas`` and ``broker_configs`` of ``__cluster_metadata.json``,
  changed under its flock (``FileSecurityStore``); each process looks for
  changes every ``LOCAL_POLL_S``.
- SCRAM credentials: ``__scram_credentials.json``, the same mapping a
  cluster keeps in ``/config/users`` (``{"<user>": {"version":1,"config":
  {"SCRAM-SHA-256": "salt=...,..."}}}``), written atomically and re-read
  when its modification time changes (``FileCredentialStore``).
- Producer ids: only the end of the last block claimed,
  ``__producer_id_block``, fsynced before any id of the block is used and
  claimed under a flock (``FileProducerIdManager``), so a restart skips
  the rest of the block and two processes never claim the same one.

Not thread-safe within a process; safe between processes.
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from kcore.dynamic_config import apply_change
from kcore.metadata_store.base import (
    BLOCK_SIZE,
    Credentials,
    Deletion,
    OnBrokerConfigs,
    OnChange,
    QuotaConfigs,
    Upsertion,
    decode_user,
    encode_user,
)
from kcore.metadata_store.node_file import NodeStore, atomic_write
from kcore.security.acl import AclBinding
from kcore.security.quotas import QuotaEntity
from kcore.security.scram import ScramCredential

log = logging.getLogger(__name__)

# A single node's broker processes write the same file; each looks for
# changes this often (a stat(2), ~2 us).
LOCAL_POLL_S = 0.5
CREDENTIALS_FILE = "__scram_credentials.json"
BLOCK_FILE = "__producer_id_block"
BLOCK_LOCK_FILE = "__producer_id_block.lock"


def apply_quota_change(configs: QuotaConfigs, entity: QuotaEntity,
                       values: dict[str, float | None]) -> None:
    current = dict(configs.get(entity, {}))
    for key, value in values.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = float(value)
    if current:
        configs[entity] = current
    else:
        configs.pop(entity, None)


def decode_quotas(items: list[dict]) -> QuotaConfigs:
    return {QuotaEntity.of(item["entity"].items()): {k: float(v) for k, v in item["values"].items()}
            for item in items}


def encode_quotas(configs: QuotaConfigs) -> list[dict]:
    return [{"entity": entity.to_json(), "values": values} for entity, values in configs.items()]


class FileSecurityStore:
    """ACLs, quotas and broker configs in the node's metadata file (see
    module doc)."""

    def __init__(self, directory: Path):
        self._store = NodeStore(directory)
        self._version: tuple[int, int] | None = None
        self._on_change: OnChange | None = None
        self._poller: asyncio.Task | None = None
        self.on_broker_configs: OnBrokerConfigs | None = None

    async def start(self, on_change: OnChange) -> None:
        self._on_change = on_change
        self._reload()
        self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _reload(self) -> None:
        self._version = self._store.version()
        state = self._store.read()
        acls = set()
        for item in state.acls:
            try:
                acls.add(AclBinding.from_json(item))
            except (KeyError, ValueError):
                log.warning("ignoring a malformed stored ACL: %r", item)
        assert self._on_change is not None
        self._on_change(acls, decode_quotas(state.client_quotas))
        if self.on_broker_configs is not None:
            self.on_broker_configs(state.broker_configs)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(LOCAL_POLL_S)
            if self._store.version() != self._version:
                self._reload()

    async def change_acls(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        with self._store.updating() as state:
            acls = {AclBinding.from_json(item) for item in state.acls}
            acls.difference_update(removed)
            acls.update(added)
            state.acls = [acl.to_json() for acl in sorted(acls)]
        self._reload()

    async def change_quotas(self, entity: QuotaEntity, values: dict[str, float | None]) -> None:
        with self._store.updating() as state:
            configs = decode_quotas(state.client_quotas)
            apply_quota_change(configs, entity, values)
            state.client_quotas = encode_quotas(configs)
        self._reload()

    async def change_broker_configs(self, entity: str, changes: dict[str, str | None]) -> None:
        with self._store.updating() as state:
            apply_change(state.broker_configs, entity, changes)
        self._reload()

    async def shutdown(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)


class FileCredentialStore:
    """The node's credentials file (see module doc). The processes of a
    node write it only through the admin request that one of them serves
    at a time."""

    def __init__(self, directory: Path):
        self._path = Path(directory) / CREDENTIALS_FILE
        self._stamp: int | None = None
        self._credentials: Credentials = {}

    async def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._read().get(user, {}).get(mechanism)

    async def all(self) -> Credentials:
        return self._read()

    async def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        credentials = {user: dict(mechanisms) for user, mechanisms in self._read().items()}
        for user, mechanism in deletions:
            credentials.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            credentials.setdefault(user, {})[mechanism] = credential
        credentials = {user: mechanisms for user, mechanisms in credentials.items() if mechanisms}
        self._path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self._path, json.dumps(
            {user: json.loads(encode_user(mechanisms)) for user, mechanisms in credentials.items()},
            indent=1, sort_keys=True))
        self._stamp = None

    def _read(self) -> Credentials:
        try:
            stamp = os.stat(self._path).st_mtime_ns
        except FileNotFoundError:
            return {}
        if stamp != self._stamp:
            stored = json.loads(self._path.read_text() or "{}")
            self._credentials = {user: decode_user(json.dumps(value)) for user, value in stored.items()}
            self._stamp = stamp
        return self._credentials


class FileProducerIdManager:
    """A node's producer ids (see module doc): blocks claimed from the block
    file under an exclusive flock, so the broker processes of one node
    (which share the file in the node's first log dir) never claim the same."""

    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / BLOCK_FILE
        self._lock_path = Path(data_dir) / BLOCK_LOCK_FILE
        self._next = 0
        self._block_end = 0  # exclusive

    async def next_id(self) -> int:
        if self._next >= self._block_end:
            self._next, self._block_end = self._claim_block()
        producer_id = self._next
        self._next += 1
        return producer_id

    def _claim_block(self) -> tuple[int, int]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = self._read_block_end()
            self._write_block_end(start + BLOCK_SIZE)
            return start, start + BLOCK_SIZE
        finally:
            os.close(fd)

    def _read_block_end(self) -> int:
        try:
            return int(self._path.read_text().strip())
        except FileNotFoundError:
            return 0

    def _write_block_end(self, value: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            handle.write(f"{value}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._path)

"""Where SCRAM credentials live: beside the rest of the cluster's metadata,
so they survive restarts and every broker reads the same ones.

- A cluster keeps Kafka's ZooKeeper layout: ``/config/users/<user>`` holds
  ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
  server_key=...,iterations=4096"}}`` (Kafka's ScramCredentialUtils text),
  the user name URL-encoded as Kafka's Sanitizer does. Every broker reads
  the znode when a client authenticates, so a change is seen by all at
  once, without a watch.
- A single node (or the processes of one node) keeps the same mapping in
  ``__scram_credentials.json`` next to ``__cluster_metadata.json``, written
  atomically and re-read when its modification time changes (the processes
  of a node share the file).

Both hold the salted, iterated keys only, never a password.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, unquote

from kcore.controller.node_store import atomic_write
from kcore.controller.zk_client import NoNodeError, ZkClient
from kcore.security.scram import ScramCredential

CONFIG_USERS = "/config/users"
CREDENTIALS_FILE = "__scram_credentials.json"

# user -> mechanism -> credential
Credentials = dict[str, dict[str, ScramCredential]]
Upsertion = tuple[str, str, ScramCredential]  # user, mechanism, credential
Deletion = tuple[str, str]  # user, mechanism


class CredentialStore(Protocol):
    async def get(self, user: str, mechanism: str) -> ScramCredential | None: ...
    async def all(self) -> Credentials: ...
    async def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None: ...


def encode_user(credentials: dict[str, ScramCredential]) -> str:
    return json.dumps({"version": 1, "config": {mechanism: credential.to_text()
                                                 for mechanism, credential in credentials.items()}})


def decode_user(data: bytes | str) -> dict[str, ScramCredential]:
    config = json.loads(data or "{}").get("config", {}) if data else {}
    return {mechanism: ScramCredential.from_text(text) for mechanism, text in config.items()
            if mechanism.startswith("SCRAM-")}


class FileCredentialStore:
    """The node's credentials file (see module doc). Not thread-safe; the
    processes of a node write it only through the admin request that one of
    them serves at a time."""

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


class ZkCredentialStore:
    """``/config/users`` of the cluster's ZooKeeper (see module doc)."""

    def __init__(self, zk: ZkClient):
        self._zk = zk

    async def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return (await self._user(user)).get(mechanism)

    async def all(self) -> Credentials:
        try:
            names = await self._zk.get_children(CONFIG_USERS)
        except NoNodeError:
            return {}
        result = {}
        for name in names:
            credentials = await self._user(unquote(name))
            if credentials:
                result[unquote(name)] = credentials
        return result

    async def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        changed: Credentials = {}
        for user, mechanism in deletions:
            credentials = changed.setdefault(user, await self._user(user))
            credentials.pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            if user not in changed:
                changed[user] = await self._user(user)
            changed[user][mechanism] = credential
        for user, credentials in changed.items():
            path = f"{CONFIG_USERS}/{quote(user, safe='')}"
            data = encode_user(credentials).encode()
            try:
                await self._zk.set(path, data)
            except NoNodeError:
                await self._zk.create(path, data, makepath=True)

    async def _user(self, user: str) -> dict[str, ScramCredential]:
        try:
            data, _ = await self._zk.get(f"{CONFIG_USERS}/{quote(user, safe='')}")
        except NoNodeError:
            return {}
        return decode_user(data)

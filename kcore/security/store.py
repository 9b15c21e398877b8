"""Where ACLs, client quotas and dynamic broker configs live: beside the
cluster metadata.

``SecurityStore`` is the seam. A single node (and every process of a
multi-process node) keeps them in the controller's metadata file,
``__cluster_metadata.json`` (controller/node_store.py: fields ``acls`` and
``client_quotas``, ``broker_configs``), changed under its lock; a ZooKeeper cluster in Kafka's
znodes (zk_store.py). Each change is a delta (bindings added and removed,
one entity's quotas) applied to the stored state, so two brokers changing
different ACLs at once do not lose each other's change. A broker learns
every change, its own included, by ``on_change`` and installs the whole
stored state. Dynamic broker configs (kcore/dynamic_config.py) travel
the same way to ``on_broker_configs``.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from kcore.controller.node_store import NodeStore
from kcore.dynamic_config import BrokerConfigs, apply_change
from kcore.security.acl import AclBinding
from kcore.security.quotas import QuotaEntity

log = logging.getLogger(__name__)

QuotaConfigs = dict[QuotaEntity, dict[str, float]]
OnChange = Callable[[set[AclBinding], QuotaConfigs], None]
OnBrokerConfigs = Callable[[BrokerConfigs], None]

# A single node's broker processes write the same file; each looks for
# changes this often (a stat(2), ~2 us).
LOCAL_POLL_S = 0.5


class SecurityStore(Protocol):
    on_broker_configs: OnBrokerConfigs | None

    async def start(self, on_change: OnChange) -> None:
        """Load the stored state, report it, and keep reporting changes."""
        ...

    async def change_acls(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        ...

    async def change_quotas(self, entity: QuotaEntity, values: dict[str, float | None]) -> None:
        """Set each key to its value; None removes it."""
        ...

    async def change_broker_configs(self, entity: str, changes: dict[str, str | None]) -> None:
        """Dynamic broker configs of "<id>" or "<default>"; None removes a key."""
        ...

    async def shutdown(self) -> None: ...


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


class LocalSecurityStore:
    """The state in the node's metadata file (see module doc)."""

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

"""The seams of the stores that live beside the cluster metadata, and what
both backends share.

- ``SecurityStore``: ACLs, client quotas and dynamic broker configs. Each
  change is a delta (bindings added and removed, one entity's quotas, one
  entity's config keys) applied to the stored state, so two brokers
  changing different ACLs at once do not lose each other's change. A
  broker learns every change, its own included, by ``on_change`` and
  installs the whole stored state; dynamic broker configs
  (kcore/dynamic_config.py) travel the same way to ``on_broker_configs``.
- ``CredentialStore``: SCRAM credentials, the salted, iterated keys only,
  never a password. Every broker reads them when a client authenticates,
  so a change is seen by all at once.
- ``ProducerIdSource``: producer ids for InitProducerId, handed out from
  blocks of ``BLOCK_SIZE`` so an allocation costs no write except once per
  block, and no id is ever handed out twice.

Implementations: file.py (a single node, or the processes of one node)
and zookeeper.py (a cluster).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Protocol

from kcore.dynamic_config import BrokerConfigs
from kcore.security.acl import AclBinding
from kcore.security.quotas import QuotaEntity
from kcore.security.scram import ScramCredential

QuotaConfigs = dict[QuotaEntity, dict[str, float]]
OnChange = Callable[[set[AclBinding], QuotaConfigs], None]
OnBrokerConfigs = Callable[[BrokerConfigs], None]

# user -> mechanism -> credential
Credentials = dict[str, dict[str, ScramCredential]]
Upsertion = tuple[str, str, ScramCredential]  # user, mechanism, credential
Deletion = tuple[str, str]  # user, mechanism

# Kafka's controller hands out blocks of 1000 producer ids to each broker.
BLOCK_SIZE = 1000


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


class CredentialStore(Protocol):
    async def get(self, user: str, mechanism: str) -> ScramCredential | None: ...
    async def all(self) -> Credentials: ...
    async def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None: ...


class ProducerIdSource(Protocol):
    async def next_id(self) -> int: ...


def encode_user(credentials: dict[str, ScramCredential]) -> str:
    """One user's credentials as Kafka's config JSON:
    ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
    server_key=...,iterations=4096"}}`` (ScramCredentialUtils text)."""
    return json.dumps({"version": 1, "config": {mechanism: credential.to_text()
                                                 for mechanism, credential in credentials.items()}})


def decode_user(data: bytes | str) -> dict[str, ScramCredential]:
    """The SCRAM credentials of a user's config JSON; other keys (quotas)
    are left alone."""
    config = json.loads(data or "{}").get("config", {}) if data else {}
    return {mechanism: ScramCredential.from_text(text) for mechanism, text in config.items()
            if mechanism.startswith("SCRAM-")}

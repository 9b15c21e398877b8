"""The schema registry of one broker, put together: the ``_schemas`` store,
the registry on top of it, the forwarding of writes to its primary, the
logins and ACLs, and the listeners (docs/schema-registry.md).

Every broker runs the store, listeners or not: produce-path validation
(kcore/schema_registry/validation.py) reads the registry of the broker the
records arrive at. The store costs nothing until ``_schemas`` exists.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

from collections.abc import Callable

from kcore.config import BrokerConfig, split_listener
from kcore.controller.base import Controller
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata_store.base import CredentialStore, SecurityStore
from kcore.replication.replica_manager import ReplicaManager
from kcore.schema_registry.forward import Forwarder
from kcore.schema_registry.registry import SchemaRegistry
from kcore.schema_registry.rest import RegistryService
from kcore.schema_registry.store import SchemaStore
from kcore.schema_registry.validation import SchemaValidation
from kcore.security.acl import AclBinding
from kcore.security.authorizer import Authorizer
from kcore.server.http_hosts import AllowedHosts
from kcore.server.registry_auth import RegistryAuth
from kcore.server.registry_listener import RegistryListeners
from kcore.server.sasl import AuthFailures, SaslSettings
from kcore.server.supervisor import operator_set

LOGIN_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


class BrokerRegistry:
    def __init__(self, config: BrokerConfig, controller: Controller, replica_manager: ReplicaManager,
                 syncer: Callable[[], GroupCommitSyncer | None], credentials: CredentialStore,
                 sasl: dict[str, SaslSettings], authorizer: Callable[[], Authorizer | None],
                 failures: AuthFailures, security_store: SecurityStore, replicated: bool = True):
        self.config = config
        # A node without ZooKeeper keeps one replica of internal topics.
        replication_factor = config["schema.registry.topic.replication.factor"] if replicated else 1
        self.store = SchemaStore(config.broker_id, controller, replica_manager, replication_factor, syncer)
        self.registry = SchemaRegistry(lambda: self.store.state, self.store.append)
        self.forwarder = Forwarder(config.broker_id, replica_manager.metadata_cache, self.store.leader_id)
        self.service = RegistryService(self.store, self.registry, self.forwarder.forward,
                                       _BrokerAcls(authorizer, security_store))
        self.auth = RegistryAuth(_login_users(sasl), credentials, authorizer, failures)
        own = [split_listener(item)[1] for item in config["listeners"] + (config["advertised.listeners"] or [])]
        self.listeners = RegistryListeners(self.service, self.auth,
                                           AllowedHosts(config["http.allowed.hosts"], own))
        replica_manager.leadership_listeners.append(self.store.on_leadership_change)
        self.validation = SchemaValidation(self.registry, self.store.refresh)
        replica_manager.schema_checks = self.validation.checks

    async def start(self) -> None:
        self.store.start()
        await self.listeners.start(self.config["schema.registry.listeners"],
                                   strict=operator_set(self.config, "schema.registry.listeners"))

    async def shutdown(self) -> None:
        self.listeners.close()
        self.forwarder.close()
        await self.store.close()


class _BrokerAcls:
    """The registry's /acls routes over the broker's authorizer and the
    store every broker takes its ACLs from (ZooKeeper or the node's file)."""

    def __init__(self, authorizer: Callable[[], Authorizer | None], security_store: SecurityStore):
        self._authorizer = authorizer
        self._store = security_store

    def current(self) -> frozenset[AclBinding] | None:
        authorizer = self._authorizer()
        return authorizer.acls if authorizer is not None else None

    async def change(self, added: list[AclBinding], removed: list[AclBinding]) -> None:
        await self._store.change_acls(added, removed)


def _login_users(sasl: dict[str, SaslSettings]) -> dict[str, str] | None:
    """The PLAIN users of the listeners that take logins; None when no
    listener takes PLAIN or SCRAM (no login asked)."""
    users: dict[str, str] | None = None
    for settings in sasl.values():
        if LOGIN_MECHANISMS & set(settings.mechanisms):
            users = users or {}
            if "PLAIN" in settings.mechanisms:
                users.update(settings.plain_users)
    return users

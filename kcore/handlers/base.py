"""What every handler shares: the broker seen through ``BrokerFacade`` and
the exception that asks the server to drop a connection.

A handler is `async def handle(broker, context, request) -> body | None`:
`broker` is the Broker (kcore.server.broker) seen through ``BrokerFacade``,
`context` the ConnectionContext, `request` the decoded request; the
returned body is encoded with the request's version, None sends nothing.
"""
from __future__ import annotations

from typing import Protocol

from kcore.config import BrokerConfig
from kcore.controller.base import Controller
from kcore.coordinator.group.coordinator import GroupCoordinator
from kcore.coordinator.share.service import ShareGroupService
from kcore.coordinator.txn.coordinator import TransactionCoordinator
from kcore.dynamic_config import DynamicBrokerConfig
from kcore.log.durability import GroupCommitSyncer
from kcore.metadata_store.base import CredentialStore, ProducerIdSource, SecurityStore
from kcore.metrics import BrokerStats
from kcore.protocol.api_keys import ApiKey
from kcore.replication.replica_manager import ReplicaManager
from kcore.replication.topic_ids import TopicIds
from kcore.replication.txn_verifier import TransactionVerifier
from kcore.security.authorizer import Authorizer
from kcore.security.quotas import ClientQuotas


class CloseConnection(Exception):
    """Drop this connection without answering (acks=0 produce errors)."""


class BrokerFacade(Protocol):
    """The part of the Broker that handlers use; nothing else of it."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def controller(self) -> Controller: ...
    @property
    def replica_manager(self) -> ReplicaManager: ...
    @property
    def producer_ids(self) -> ProducerIdSource: ...
    @property
    def group_coordinator(self) -> GroupCoordinator: ...
    @property
    def txn_coordinator(self) -> TransactionCoordinator: ...
    @property
    def txn_verifier(self) -> TransactionVerifier: ...
    @property
    def log_syncer(self) -> GroupCommitSyncer | None: ...
    @property
    def api_versions(self) -> dict[ApiKey, tuple[int, int]]: ...
    @property
    def stats(self) -> BrokerStats: ...
    @property
    def scram_credentials(self) -> CredentialStore: ...
    @property
    def authorizer(self) -> Authorizer | None:
        """None unless authorizer.class.name is set: everything allowed."""
        ...
    @property
    def quotas(self) -> ClientQuotas: ...
    @property
    def security_store(self) -> SecurityStore: ...
    @property
    def dynamic_config(self) -> DynamicBrokerConfig: ...
    @property
    def topic_ids(self) -> TopicIds: ...
    @property
    def share_groups(self) -> ShareGroupService: ...

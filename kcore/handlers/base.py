"""What every handler shares: the broker facade it is given and the
exception that asks the server to drop a connection.

A handler is `async def handle(broker, context, request) -> body | None`:
`broker` is the Broker (kcore.server.broker) seen through the attributes
below, `context` the ConnectionContext, `request` the decoded request; the
returned body is encoded with the request's version, None sends nothing.
"""
from __future__ import annotations

from typing import Any, Protocol


class CloseConnection(Exception):
    """Drop this connection without answering (acks=0 produce errors)."""


class BrokerFacade(Protocol):
    config: Any              # kcore.server.config.BrokerConfig
    controller: Any          # kcore.controller.local.LocalController
    replica_manager: Any     # kcore.replication.replica_manager.ReplicaManager
    producer_ids: Any        # kcore.controller.producer_ids.ProducerIdManager
    group_coordinator: Any   # kcore.coordinator.group.coordinator.GroupCoordinator

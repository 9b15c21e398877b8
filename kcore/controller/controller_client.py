"""A broker's requests to the active controller: AlterPartition (ISR
changes its partitions' leaders propose), ControlledShutdown,
ElectLeaders and the partition reassignment requests, over the Kafka protocol at the pinned inter-broker versions.

The controller's id comes from the ``/controller`` watch, its address from
``/brokers/ids``; one connection is kept to it and replaced when the
controller moves. A request that meets no controller (none elected, the
connection fails, or it answers NOT_CONTROLLER because it just lost office)
is retried every ``RETRY_BACKOFF_S`` until its deadline; ControlledShutdown
alone is tried once per call, as Kafka's broker tries it, because its
caller retries it a bounded number of times and then stops anyway
(zk_controller.py): a cluster stopping whole has no controller left to wait for.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from kcore.client.admin import (
    alter_reassignments_body,
    alter_reassignments_results,
    elect_leaders_body,
    election_results,
    list_reassignments_body,
    list_reassignments_results,
)
from kcore.client.connection import BrokerConnection
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.client.inter_broker import inter_broker_security
from kcore.controller import zk_paths as paths
from kcore.controller.base import IsrChange
from kcore.controller.reassignment import ReplicaAssignment
from kcore.metadata import TopicPartition
from kcore.metadata_store.zk_client import NoNodeError, ZkClient
from kcore.protocol.api_keys import INTER_BROKER_VERSIONS, ApiKey
from kcore.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
# Kafka's controller.socket.timeout.ms default.
REQUEST_TIMEOUT_S = 30.0
ELECT_LEADERS_VERSION = 2
# AlterPartitionReassignments / ListPartitionReassignments at v0; an alter
# that refuses replication factor changes needs v1 (KIP-860), sent only then
# so that a controller knowing v0 alone still takes the others.
REASSIGNMENTS_VERSION = 0
KIP_860_VERSION = 1


class NoControllerError(Exception):
    """No controller answered before the deadline."""


class ControllerWatch(Protocol):
    """What the client reads of its broker's ZkController: who the
    controller is (the ``/controller`` watch), and the event set whenever
    that changes."""

    zk: ZkClient
    broker_id: int
    controller_id: int
    controller_changed: asyncio.Event


class ControllerClient:
    def __init__(self, owner: ControllerWatch):
        self.owner = owner
        self._connection: BrokerConnection | None = None
        self._connected_to = -1

    async def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection, self._connected_to = None, -1

    async def _connect(self) -> BrokerConnection:
        controller_id = self.owner.controller_id
        if controller_id < 0:
            raise BrokerConnectionError("no controller is elected")
        if self._connection is not None and not self._connection.closed \
                and self._connected_to == controller_id:
            return self._connection
        self._drop()
        try:
            data, stat = await self.owner.zk.get(paths.broker_path(controller_id))
        except NoNodeError:
            raise BrokerConnectionError(f"controller {controller_id} is not registered") from None
        broker = paths.decode_broker(controller_id, data, stat.czxid)
        self._connection = await BrokerConnection.open(
            broker.host, broker.port, client_id=f"kcore-broker-{self.owner.broker_id}",
            request_timeout_s=REQUEST_TIMEOUT_S, security=inter_broker_security())
        self._connected_to = controller_id
        return self._connection

    async def send_once(self, api_key: int, body: dict, version: int) -> Any:
        """One try at the controller as this broker knows it now: its answer,
        or BrokerConnectionError at once when none is elected, it is not
        registered, cannot be reached or answers NOT_CONTROLLER."""
        try:
            connection = await self._connect()
            response = await connection.request(api_key, body, version=version)
        except (BrokerConnectionError, KafkaError, OSError) as exc:
            self._drop()
            raise BrokerConnectionError(f"request {api_key} to the controller failed: {exc}") from exc
        if getattr(response, "error_code", ErrorCode.NONE) == ErrorCode.NOT_CONTROLLER:
            controller_id = self._connected_to
            self._drop()
            raise BrokerConnectionError(f"broker {controller_id} is no longer the controller")
        return response

    async def send(self, api_key: int, body: dict, version: int, timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
        """``send_once`` until a controller answers or ``timeout_s`` passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                return await self.send_once(api_key, body, version)
            except BrokerConnectionError as exc:
                log.debug("%s", exc)
            if loop.time() >= deadline:
                raise NoControllerError(f"no controller answered request {api_key} in "
                                        f"{timeout_s:g}s")
            waiter = self.owner.controller_changed.wait()
            try:
                await asyncio.wait_for(waiter, RETRY_BACKOFF_S)
            except TimeoutError:
                pass

    # -- the requests -------------------------------------------------------------------------
    async def alter_partition(self, broker_epoch: int, items: Sequence[IsrChange]
                              ) -> tuple[int, dict[TopicPartition, tuple[int, Any]]]:
        """(top-level error, per partition (error, response entry))."""
        topics: dict[str, list[dict]] = {}
        for (topic, index), leader_epoch, new_isr, partition_epoch in items:
            topics.setdefault(topic, []).append({
                "partition_index": index, "leader_epoch": leader_epoch, "new_isr": new_isr,
                "leader_recovery_state": 0, "partition_epoch": partition_epoch})
        response = await self.send(ApiKey.ALTER_PARTITION, {
            "broker_id": self.owner.broker_id, "broker_epoch": broker_epoch,
            "topics": [{"topic_name": t, "partitions": p} for t, p in topics.items()]},
            INTER_BROKER_VERSIONS[ApiKey.ALTER_PARTITION])
        results = {(topic.topic_name, p.partition_index): (p.error_code, p)
                   for topic in response.topics for p in topic.partitions}
        return response.error_code, results

    async def controlled_shutdown(self, broker_epoch: int) -> list[TopicPartition]:
        """One attempt (Kafka's KafkaServer.controlledShutdown tries each
        time once, the caller retries): the partitions still led here after
        the controller moved what it could. BrokerConnectionError at once
        when no controller is elected or reachable; a controller that
        accepts and never answers costs REQUEST_TIMEOUT_S (Kafka's
        controller.socket.timeout.ms)."""
        response = await self.send_once(ApiKey.CONTROLLED_SHUTDOWN, {
            "broker_id": self.owner.broker_id, "broker_epoch": broker_epoch},
            INTER_BROKER_VERSIONS[ApiKey.CONTROLLED_SHUTDOWN])
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, context="ControlledShutdown")
        return [(p.topic_name, p.partition_index) for p in response.remaining_partitions]

    async def elect_leaders(self, election_type: int, partitions: Sequence[TopicPartition] | None
                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        response = await self.send(ApiKey.ELECT_LEADERS, elect_leaders_body(
            partitions, election_type, int(REQUEST_TIMEOUT_S * 1000)), ELECT_LEADERS_VERSION)
        return election_results(response)

    async def alter_reassignments(self, items: Sequence[tuple[TopicPartition, list[int] | None]],
                                  allow_replication_factor_change: bool = True
                                  ) -> dict[TopicPartition, tuple[int, str | None]]:
        body = alter_reassignments_body(items, int(REQUEST_TIMEOUT_S * 1000),
                                        allow_replication_factor_change)
        version = REASSIGNMENTS_VERSION if allow_replication_factor_change else KIP_860_VERSION
        response = await self.send(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, version)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, response.error_message,
                             "AlterPartitionReassignments")
        return alter_reassignments_results(response)

    async def list_reassignments(self, partitions: Sequence[TopicPartition] | None
                                 ) -> dict[TopicPartition, ReplicaAssignment]:
        response = await self.send(ApiKey.LIST_PARTITION_REASSIGNMENTS, list_reassignments_body(
            partitions, int(REQUEST_TIMEOUT_S * 1000)), REASSIGNMENTS_VERSION)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, response.error_message,
                             "ListPartitionReassignments")
        return {key: ReplicaAssignment(found.replicas, found.adding_replicas,
                                       found.removing_replicas)
                for key, found in list_reassignments_results(response).items()}

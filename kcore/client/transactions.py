"""Transaction administration: list, describe, the producers of a
partition, and aborting a hanging transaction; what `kafka-transactions`
does, on kcore.protocol.

ListTransactions goes to every broker (each answers for the transactional
ids it coordinates); DescribeTransactions to the id's coordinator
(FindCoordinator key type 1); DescribeProducers and the abort's
WriteTxnMarkers to the partition's leader. An abort is for a transaction
whose coordinator lost track of it (a hanging transaction holding a
partition's last stable offset back): it writes the ABORT marker the
coordinator would have, with the producer epoch and coordinator epoch the
leader reports (Kafka's Admin.abortTransaction).
"""
from __future__ import annotations

from dataclasses import dataclass

from kcore.client.errors import ClientError, KafkaError
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.constants import TRANSACTION_KEY_TYPE


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class TransactionAdmin:
    """Transaction calls through a KafkaClient. Owned by one event loop."""

    def __init__(self, client):
        self.client = client

    async def list_transactions(self, states: list[str] | None = None,
                   producer_ids: list[int] | None = None) -> list[TransactionListing]:
        await self.client.refresh_metadata([])
        found = []
        for broker_id in sorted(self.client.metadata.brokers):
            connection = await self.client.connection(broker_id)
            response = await connection.request(ApiKey.LIST_TRANSACTIONS, {
                "state_filters": states or [], "producer_id_filters": producer_ids or []})
            if response.error_code:
                raise KafkaError(response.error_code, context=f"ListTransactions on broker {broker_id}")
            found += [TransactionListing(t.transactional_id, broker_id, t.producer_id,
                                         t.transaction_state)
                      for t in response.transaction_states]
        return sorted(found, key=lambda t: t.transactional_id)

    async def find_coordinator(self, transactional_id: str) -> int:
        connection = await self.client.any_connection()
        response = await connection.request(ApiKey.FIND_COORDINATOR, {
            "key": transactional_id, "key_type": TRANSACTION_KEY_TYPE})
        if response.error_code:
            raise KafkaError(response.error_code, getattr(response, "error_message", None),
                             context=f"transactional id {transactional_id}")
        return response.node_id

    async def describe(self, transactional_id: str) -> TransactionDescription:
        coordinator_id = await self.find_coordinator(transactional_id)
        connection = await self.client.connection(coordinator_id)
        response = await connection.request(ApiKey.DESCRIBE_TRANSACTIONS,
                                            {"transactional_ids": [transactional_id]})
        state = response.transaction_states[0]
        if state.error_code:
            raise KafkaError(state.error_code, context=f"transactional id {transactional_id}")
        partitions = tuple(sorted((t.topic, p) for t in state.topics for p in t.partitions))
        return TransactionDescription(transactional_id, coordinator_id, state.transaction_state,
                                      state.producer_id, state.producer_epoch,
                                      state.transaction_timeout_ms,
                                      state.transaction_start_time_ms, partitions)

    async def describe_producers(self, topic: str, partition: int) -> list[ProducerState]:
        connection = await self.client.leader_connection(topic, partition)
        response = await connection.request(ApiKey.DESCRIBE_PRODUCERS, {
            "topics": [{"name": topic, "partition_indexes": [partition]}]})
        result = response.topics[0].partitions[0]
        if result.error_code:
            raise KafkaError(result.error_code, result.error_message, context=f"{topic}-{partition}")
        return [ProducerState(p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp,
                              p.coordinator_epoch, p.current_txn_start_offset)
                for p in result.active_producers]

    async def abort(self, topic: str, partition: int, start_offset: int) -> ProducerState:
        """Abort the open transaction that starts at ``start_offset`` in
        the partition; returns the producer it belonged to."""
        producers = await self.describe_producers(topic, partition)
        hanging = [p for p in producers if p.current_txn_start_offset == start_offset]
        if not hanging:
            raise ClientError(f"{topic}-{partition}: no open transaction starts at offset "
                              f"{start_offset}")
        producer = hanging[0]
        connection = await self.client.leader_connection(topic, partition)
        response = await connection.request(ApiKey.WRITE_TXN_MARKERS, {"markers": [{
            "producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch,
            "transaction_result": False, "coordinator_epoch": producer.coordinator_epoch,
            "topics": [{"name": topic, "partition_indexes": [partition]}]}]})
        code = response.markers[0].topics[0].partitions[0].error_code
        if code:
            raise KafkaError(code, context=f"abort in {topic}-{partition}")
        return producer

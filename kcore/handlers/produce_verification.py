"""Transaction verification of a Produce request (KIP-890 part 1; Kafka's
``ReplicaManager.handleProduceAppend``).

With ``transaction.partition.verification.enable`` (default true), a
partition whose batch is transactional and whose leader holds no data of
the producer's open transaction yet is verified with the transaction
coordinator before anything of the request is appended
(replication/txn_verifier.py); each partition then appends under the
verification guard taken before asking (log/producer_state.py), or under
none, so that a transactional batch outside an ongoing transaction is
refused with INVALID_TXN_STATE whatever the request says (a batch whose
request names no transactional id included).

The coordinator's answers become what producers know (Kafka's mapping):
TRANSACTION_ABORTABLE and INVALID_TXN_STATE become INVALID_TXN_STATE
("Partition was not added to the transaction"), at every Produce version:
Kafka answers TRANSACTION_ABORTABLE itself from v11, which kcore does not
yet do); the retriable
CONCURRENT_TRANSACTIONS, NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR become NOT_ENOUGH_REPLICAS,
which every producer retries without refreshing its metadata; the others
(INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING) pass as they are.
Transactional batches of more than one producer in one request are refused
whole with INVALID_PRODUCER_ID_MAPPING.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcore._native import records as native_records
from kcore._native.batch_layout import BATCH_HEADER_SIZE
from kcore._native.records import BatchHeader
from kcore.handlers.base import BrokerFacade
from kcore.log.producer_state import NO_VERIFICATION_GUARD
from kcore.protocol.errors import ErrorCode
from kcore.replication.partition import Partition

TopicPartition = tuple[str, int]
NamedTopics = Sequence[tuple[str, Sequence[Any]]]

_RETRIABLE = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        ErrorCode.NOT_COORDINATOR})


@dataclass
class Verification:
    """``guards``: the guard each partition appends under (None: not
    checked at all, verification being off); ``refused``: (error code,
    message) of the partitions that may not append."""

    enabled: bool
    guards: dict[TopicPartition, int] = field(default_factory=dict)
    refused: dict[TopicPartition, tuple[int, str]] = field(default_factory=dict)

    def guard(self, partition: TopicPartition) -> int | None:
        return self.guards.get(partition, NO_VERIFICATION_GUARD) if self.enabled else None


async def verify_produce(broker: BrokerFacade, body, topics: NamedTopics,
                         writable: Callable[[str], bool]) -> Verification:
    """Verify what the request's transactional batches need (module
    docstring); ``topics``: (name, partition_data) of the request's topics
    whose name is known (v13 names them by id); topics not ``writable``
    (refused by the authorizer) are left out."""
    verifier = broker.txn_verifier
    if not verifier.enabled:
        return Verification(False)
    verification = Verification(True)
    if not body.transactional_id:
        return verification
    producers: set[tuple[int, int]] = set()
    wanted: dict[TopicPartition, Partition] = {}
    for partition, header in _transactional_batches(broker, topics, writable):
        producers.add((header.producer_id, header.producer_epoch))
        if not partition.producers.has_ongoing_transaction(header.producer_id):
            wanted[partition.topic_partition] = partition
    if len(producers) > 1:
        verification.refused = {tp: (ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                                     "transactional records of more than one producer id")
                                for tp, _ in _partitions(topics)}
        return verification
    if not wanted:
        return verification
    ((producer_id, producer_epoch),) = producers
    for key, partition in wanted.items():
        verification.guards[key] = partition.producers.start_verification(producer_id)
    errors = await verifier.verify(body.transactional_id, producer_id, producer_epoch, set(wanted))
    for key, code in errors.items():
        if code != ErrorCode.NONE:
            verification.refused[key] = _for_produce(code)
    return verification


def _for_produce(code: int) -> tuple[int, str]:
    if code in (ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTION_ABORTABLE):
        return ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"
    if code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS, ("Unable to verify the partition has been added to "
                                               f"the transaction. Underlying error: {ErrorCode(code).name}")
    return code, f"transaction verification: {ErrorCode(code).name}"


def _partitions(topics: NamedTopics) -> Iterator[tuple[TopicPartition, Any]]:
    for name, partition_data in topics:
        for data in partition_data:
            yield (name, data.index), data


def _transactional_batches(broker: BrokerFacade, topics: NamedTopics, writable: Callable[[str], bool]
                           ) -> Iterator[tuple[Partition, BatchHeader]]:
    """(partition, batch header) of each partition this broker leads whose
    batch is transactional; anything else is left to the append's checks."""
    for (topic, index), data in _partitions(topics):
        records = data.records
        if records is None or len(records) < BATCH_HEADER_SIZE or not writable(topic):
            continue
        header = native_records.parse_batch_header(records)
        if not header.is_transactional or header.producer_id < 0:
            continue
        partition = broker.replica_manager.get(topic, index)
        if partition is not None and partition.is_leader:
            yield partition, header

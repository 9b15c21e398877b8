"""Asks the transaction coordinator whether partitions are in a producer's
ongoing transaction, before their leader appends its transactional batches
(KIP-890 part 1, ``transaction.partition.verification.enable``; Kafka's
``AddPartitionsToTxnManager``).

The coordinator of a transactional id leads its ``__transaction_state``
partition. When that is this broker, the coordinator is asked directly
(``local``, a plain call: a single node never sends a request to itself).
Otherwise the question goes as AddPartitionsToTxn v4+ with ``verify_only``
over the inter-broker listener, batched per coordinator: at most one
request is in flight to each, and the questions that arrive meanwhile go
together in the next one, one entry per transactional id. Two questions of
one transactional id in the same batch: with the same producer id and
epoch their partitions are merged (Kafka answers the older one
NETWORK_EXCEPTION instead, which its producers retry), else the older epoch
gets INVALID_PRODUCER_EPOCH (Kafka's rule).

Answers, per partition: NONE (verified), or the coordinator's error, with
PRODUCER_FENCED as INVALID_PRODUCER_EPOCH (what producers handle there);
COORDINATOR_NOT_AVAILABLE when no live broker leads the coordinator's
partition, NETWORK_EXCEPTION when the request failed. A coordinator that
does not serve v4 (an older broker) cannot verify: its partitions count as
verified, as Kafka does. The produce handler turns these into the answer
clients know (handlers/produce_verification.py).

Only the first batch of a producer's transaction on a partition is
verified: once the partition holds data of the open transaction, the
leader knows the transaction is ongoing until a marker ends it
(log/producer_state.py, ``has_ongoing_transaction``).

Not thread-safe: the broker's event loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kcore.client.broker_pool import BrokerPool
from kcore.client.errors import BrokerConnectionError, KafkaError
from kcore.protocol.api_keys import BROKER_VERSIONS_FROM, ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.replication.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Errors = dict[TopicPartition, int]
# (transactional id, producer id, producer epoch, partitions) -> per partition error.
LocalVerify = Callable[[str, int, int, set[TopicPartition]], Errors]
# transactional id -> its coordinator's partition (__transaction_state, index).
CoordinatorPartition = Callable[[str], TopicPartition]

# The first AddPartitionsToTxn version with verify_only.
FIRST_VERIFY_VERSION = BROKER_VERSIONS_FROM[ApiKey.ADD_PARTITIONS_TO_TXN]
# Kafka's request.timeout.ms default, as for the transaction markers.
REQUEST_TIMEOUT_S = 30.0


@dataclass
class _Question:
    producer_id: int
    producer_epoch: int
    partitions: set[TopicPartition]
    waiters: list[tuple[set[TopicPartition], asyncio.Future]] = field(default_factory=list)

    def answer(self, errors: Errors, default: int) -> None:
        """Each waiter gets its partitions' errors (``default`` where none is given)."""
        for partitions, future in self.waiters:
            if not future.done():
                future.set_result({tp: errors.get(tp, default) for tp in partitions})


class TransactionVerifier:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache,
                 coordinator_partition: CoordinatorPartition, local: LocalVerify,
                 enabled: bool = True):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.coordinator_partition = coordinator_partition
        self.local = local
        self.enabled = enabled
        self._pool = BrokerPool(f"kcore-txn-verifier-{broker_id}", metadata_cache.address_of,
                                REQUEST_TIMEOUT_S)
        self._queued: dict[int, dict[str, _Question]] = {}  # coordinator id -> questions
        self._in_flight: dict[int, asyncio.Task] = {}

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: set[TopicPartition]) -> Errors:
        """Per partition NONE or why it is not verified (module docstring)."""
        coordinator = self.metadata_cache.leader_of(*self.coordinator_partition(transactional_id))
        if coordinator is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if coordinator.broker_id == self.broker_id:
            errors = self.local(transactional_id, producer_id, producer_epoch, set(partitions))
            return {tp: _for_producers(code) for tp, code in errors.items()}
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._ask(coordinator.broker_id, transactional_id, producer_id, producer_epoch,
                  set(partitions), future)
        return await future

    def _ask(self, coordinator: int, transactional_id: str, producer_id: int, producer_epoch: int,
             partitions: set[TopicPartition], future: asyncio.Future) -> None:
        queued = self._queued.setdefault(coordinator, {})
        question = queued.get(transactional_id)
        if question is not None and (question.producer_id, question.producer_epoch) \
                != (producer_id, producer_epoch):
            if question.producer_epoch > producer_epoch:
                future.set_result(dict.fromkeys(partitions, ErrorCode.INVALID_PRODUCER_EPOCH))
                return
            question.answer({}, ErrorCode.INVALID_PRODUCER_EPOCH)
            question = None
        if question is None:
            question = queued[transactional_id] = _Question(producer_id, producer_epoch, set())
        question.partitions |= partitions
        question.waiters.append((partitions, future))
        self._send_next(coordinator)

    def _send_next(self, coordinator: int) -> None:
        if coordinator in self._in_flight or not self._queued.get(coordinator):
            return
        questions = self._queued.pop(coordinator)
        task = asyncio.get_running_loop().create_task(self._send(coordinator, questions))
        self._in_flight[coordinator] = task
        task.add_done_callback(lambda _: self._sent(coordinator))

    def _sent(self, coordinator: int) -> None:
        self._in_flight.pop(coordinator, None)
        self._send_next(coordinator)

    async def _send(self, coordinator: int, questions: dict[str, _Question]) -> None:
        try:
            answers = await self._request(coordinator, questions)
        except Exception as exc:  # the request failed, or a bug: never leave producers waiting
            if isinstance(exc, (BrokerConnectionError, KafkaError, OSError, LookupError)):
                log.info("transaction verification with broker %d failed: %s", coordinator, exc)
            else:
                log.exception("transaction verification with broker %d failed", coordinator)
            self._pool.drop(coordinator)
            answers = {}
        for transactional_id, question in questions.items():
            question.answer(answers.get(transactional_id, {}), ErrorCode.NETWORK_EXCEPTION)

    async def _request(self, coordinator: int, questions: dict[str, _Question]) -> dict[str, Errors]:
        """transactional id -> its unverified partitions (the others are NONE)."""
        connection = await self._pool.connection(coordinator)
        version = connection.version_for(ApiKey.ADD_PARTITIONS_TO_TXN)
        if version < FIRST_VERIFY_VERSION:
            log.warning("broker %d cannot verify transactions (AddPartitionsToTxn v%d): "
                        "appending unverified", coordinator, version)
            return {transactional_id: dict.fromkeys(question.partitions, ErrorCode.NONE)
                    for transactional_id, question in questions.items()}
        response = await connection.request(ApiKey.ADD_PARTITIONS_TO_TXN, _body(questions),
                                             version=version)
        if response.error_code != ErrorCode.NONE:
            # The producer must not see the brokers' CLUSTER_AUTHORIZATION_FAILED (Kafka's rule).
            code = (ErrorCode.INVALID_TXN_STATE
                    if response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    else response.error_code)
            log.warning("transaction verification with broker %d: error %s", coordinator,
                        ErrorCode(code).name)
            return {transactional_id: {tp: code for tp in question.partitions}
                    for transactional_id, question in questions.items()}
        return {result.transactional_id: {
                    (topic.name, partition.partition_index): _for_producers(partition.partition_error_code)
                    for topic in result.topic_results for partition in topic.results_by_partition}
                for result in response.results_by_transaction}

    def close(self) -> None:
        for task in self._in_flight.values():
            task.cancel()
        for queued in self._queued.values():
            for question in queued.values():
                question.answer({}, ErrorCode.NETWORK_EXCEPTION)
        self._queued.clear()
        self._pool.close()


def _body(questions: dict[str, _Question]) -> dict:
    transactions = []
    for transactional_id, question in questions.items():
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(question.partitions):
            topics.setdefault(topic, []).append(index)
        transactions.append({
            "transactional_id": transactional_id, "producer_id": question.producer_id,
            "producer_epoch": question.producer_epoch, "verify_only": True,
            "topics": [{"name": name, "partitions": indexes} for name, indexes in topics.items()]})
    return {"transactions": transactions}


def _for_producers(code: int) -> int:
    """Producers handle INVALID_PRODUCER_EPOCH where the coordinator says PRODUCER_FENCED."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code

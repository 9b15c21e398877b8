"""Transactions with the real clients: commit and abort (confluent-kafka,
kafka-python, aiokafka), what read_committed and read_uncommitted consumers
see, the last stable offset while a transaction is open (Fetch and
ListOffsets), consumer offsets committed inside a transaction, fencing of a
zombie producer by a new instance with its transactional id, and the
coordinator aborting a transaction its producer abandoned."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec
from confluent_kafka.error import KafkaError

from tests.support.compat import start_broker, unique_topic, wait_until
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.transactions import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TXN_TIMEOUT_S,
    labelled,
    produce_in_transaction,
    read_to_end,
    read_until_eof,
    reader,
    txn_producer,
    values,
)

# Kafka's error names for a fenced producer, as each client reports them.
FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def create_topic(bootstrap: str, prefix: str, partitions: int = 1) -> str:
    topic, admin = unique_topic(prefix), admin_client(bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(ADMIN_TIMEOUT_S)
    return topic


def end_offset(bootstrap: str, topic: str, isolation: str, partition: int = 0) -> int:
    """ListOffsets latest under ``isolation``, through librdkafka's watermark
    query (which sends the consumer's isolation level)."""
    consumer = reader(bootstrap, isolation)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1]
    finally:
        consumer.close()


@pytest.mark.processes
def test_confluent_commit_is_read_and_abort_is_hidden_from_read_committed(shared_broker):
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-cf", partitions=4)
    producer = txn_producer(bootstrap)
    committed, aborted = [], []
    for round_ in range(3):
        for partition in range(4):
            good = labelled(f"commit-{round_}-p{partition}", 20)
            bad = labelled(f"abort-{round_}-p{partition}", 20)
            produce_in_transaction(producer, topic, good, partition)
            produce_in_transaction(producer, topic, bad, partition, commit=False)
            committed += good
            aborted += bad

    seen_committed = read_to_end(bootstrap, topic, 4, READ_COMMITTED)
    assert sorted(values(seen_committed)) == sorted(committed)
    for partition in range(4):  # in order within each partition
        in_partition = [r.value for r in seen_committed if r.partition == partition]
        assert in_partition == [v for v in committed if f"-p{partition}-".encode() in v]

    seen_all = values(read_to_end(bootstrap, topic, 4, READ_UNCOMMITTED))
    assert sorted(seen_all) == sorted(committed + aborted)
    # Nothing is open any more: the LSO is the high watermark.
    for partition in range(4):  # once the last markers landed (they follow EndTxn)
        wait_until(lambda p=partition: end_offset(bootstrap, topic, READ_COMMITTED, p)
                   == end_offset(bootstrap, topic, READ_UNCOMMITTED, p), 10, f"the LSO of partition {partition}")


@pytest.mark.processes
def test_read_committed_stops_at_the_open_transaction_and_moves_on_after_its_commit(shared_broker):
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-lso")
    first, other = txn_producer(bootstrap), txn_producer(bootstrap)
    produce_in_transaction(first, topic, labelled("before", 10))
    # A commit returns once the coordinator has decided; its marker reaches
    # the partition just after, as in Kafka: wait for 10 records + the marker.
    lso = 11
    wait_until(lambda: end_offset(bootstrap, topic, READ_UNCOMMITTED) == lso, 10, "the first commit's marker")

    other.begin_transaction()
    for value in labelled("open", 5):
        other.produce(topic, value, partition=0)
    assert other.flush(TXN_TIMEOUT_S) == 0
    # Committed after the open transaction began: above the LSO until it ends.
    produce_in_transaction(first, topic, labelled("after", 5))

    wait_until(lambda: end_offset(bootstrap, topic, READ_UNCOMMITTED) == lso + 5 + 6, 10,
               "the second commit's marker")
    assert end_offset(bootstrap, topic, READ_COMMITTED) == lso
    admin = admin_client(bootstrap)
    request = {TopicPartition(topic, 0): OffsetSpec.latest()}
    for isolation, expected in ((IsolationLevel.READ_COMMITTED, lso),
                                (IsolationLevel.READ_UNCOMMITTED, lso + 11)):
        found = admin.list_offsets(request, isolation_level=isolation, request_timeout=ADMIN_TIMEOUT_S)
        assert found[TopicPartition(topic, 0)].result(ADMIN_TIMEOUT_S).offset == expected

    consumer = reader(bootstrap, READ_COMMITTED)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        assert values(read_until_eof(consumer, {0})) == labelled("before", 10)
        # A while longer: nothing past the LSO comes while the transaction is open.
        assert [m for m in consumer.consume(100, 1.0) if m.error() is None] == []
        other.commit_transaction(TXN_TIMEOUT_S)
        assert values(read_until_eof(consumer, {0})) == labelled("open", 5) + labelled("after", 5)
    finally:
        consumer.close()
    wait_until(lambda: end_offset(bootstrap, topic, READ_COMMITTED) == end_offset(bootstrap, topic, READ_UNCOMMITTED),
               10, "the LSO to reach the high watermark once every transaction ended")


def test_read_uncommitted_sees_open_and_aborted_records(shared_broker):
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-uncommitted")
    producer = txn_producer(bootstrap)
    produce_in_transaction(producer, topic, labelled("aborted", 5), commit=False)
    producer.begin_transaction()
    for value in labelled("open", 5):
        producer.produce(topic, value, partition=0)
    assert producer.flush(TXN_TIMEOUT_S) == 0
    assert values(read_to_end(bootstrap, topic, 1, READ_UNCOMMITTED)) == labelled("aborted", 5) + labelled("open", 5)
    assert read_to_end(bootstrap, topic, 1, READ_COMMITTED) == []
    producer.abort_transaction(TXN_TIMEOUT_S)
    assert read_to_end(bootstrap, topic, 1, READ_COMMITTED) == []


def committed_offset(bootstrap: str, group: str, topic: str, isolation: str = READ_UNCOMMITTED,
                     timeout: float = 10) -> int:
    """The group's committed offset as a consumer with ``isolation`` reads
    it: librdkafka asks read_committed ones' OffsetFetch to be stable
    (require_stable, KIP-447), so those wait out a pending transactional
    commit of the partition."""
    consumer = reader(bootstrap, isolation, **{"group.id": group})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=timeout)[0].offset
    finally:
        consumer.close()


@pytest.mark.processes
def test_offsets_sent_to_a_transaction_are_committed_only_with_it(shared_broker):
    bootstrap = shared_broker.bootstrap
    source, sink = create_topic(bootstrap, "txn-offsets-in"), create_topic(bootstrap, "txn-offsets-out")
    group = f"txn-group-{uuid.uuid4().hex[:8]}"
    consumer = reader(bootstrap, READ_COMMITTED, **{"group.id": group})
    producer = txn_producer(bootstrap)
    try:
        consumer.commit(offsets=[TopicPartition(source, 0, 5)], asynchronous=False)
        metadata = consumer.consumer_group_metadata()

        producer.begin_transaction()
        producer.produce(sink, b"aborted-output", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 20)], metadata, TXN_TIMEOUT_S)
        assert committed_offset(bootstrap, group, source) == 5  # pending until the commit
        with pytest.raises(KafkaException):   # require_stable: unstable while the transaction is open
            committed_offset(bootstrap, group, source, READ_COMMITTED, timeout=2)
        producer.abort_transaction(TXN_TIMEOUT_S)
        assert committed_offset(bootstrap, group, source) == 5

        producer.begin_transaction()
        producer.produce(sink, b"committed-output", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 30)], metadata, TXN_TIMEOUT_S)
        producer.commit_transaction(TXN_TIMEOUT_S)
        # The marker reaches __consumer_offsets just after EndTxn is answered.
        wait_until(lambda: committed_offset(bootstrap, group, source, READ_COMMITTED) == 30, 10,
                   "the offset committed")
    finally:
        consumer.close()
    assert values(read_to_end(bootstrap, sink, 1, READ_COMMITTED)) == [b"committed-output"]


@pytest.mark.processes
def test_a_read_committed_consumer_waits_for_a_pending_transactional_offset_commit(shared_broker):
    """KIP-447: a consumer taking over a partition must not start from the
    offset before a transactional commit that is about to land (it would
    process those records again: seen as a value processed by two committed
    transactions in the fault suite's exactly-once workload)."""
    bootstrap = shared_broker.bootstrap
    source, sink = create_topic(bootstrap, "txn-stable-in"), create_topic(bootstrap, "txn-stable-out")
    group = f"txn-stable-{uuid.uuid4().hex[:8]}"
    consumer = reader(bootstrap, READ_COMMITTED, **{"group.id": group})
    producer = txn_producer(bootstrap)
    try:
        consumer.commit(offsets=[TopicPartition(source, 0, 5)], asynchronous=False)
        producer.begin_transaction()
        producer.produce(sink, b"output", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 20)],
                                             consumer.consumer_group_metadata(), TXN_TIMEOUT_S)
        with pytest.raises(KafkaException):     # still pending: no stable answer
            committed_offset(bootstrap, group, source, READ_COMMITTED, timeout=2)
        assert committed_offset(bootstrap, group, source, READ_UNCOMMITTED) == 5
        waiting = asyncio.new_event_loop()
        try:
            answer = waiting.run_in_executor(None, committed_offset, bootstrap, group, source, READ_COMMITTED, 20)
            time.sleep(1.0)
            producer.commit_transaction(TXN_TIMEOUT_S)
            assert waiting.run_until_complete(answer) == 20
        finally:
            waiting.close()
    finally:
        consumer.close()


def fenced(error: KafkaException) -> bool:
    return error.args[0].code() in FENCED_CODES


@pytest.mark.processes
def test_new_instance_fences_the_zombie_and_aborts_its_transaction(shared_broker):
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-zombie")
    transactional_id = f"zombie-{uuid.uuid4().hex[:8]}"
    zombie = txn_producer(bootstrap, transactional_id)
    produce_in_transaction(zombie, topic, labelled("zombie-committed", 3))
    zombie.begin_transaction()
    for value in labelled("zombie-open", 3):
        zombie.produce(topic, value, partition=0)
    assert zombie.flush(TXN_TIMEOUT_S) == 0

    successor = txn_producer(bootstrap, transactional_id)  # aborts the open transaction
    with pytest.raises(KafkaException) as error:
        zombie.produce(topic, b"zombie-late", partition=0)
        zombie.flush(TXN_TIMEOUT_S)
        zombie.commit_transaction(TXN_TIMEOUT_S)
    assert fenced(error.value), error.value

    produce_in_transaction(successor, topic, labelled("successor", 3))
    assert values(read_to_end(bootstrap, topic, 1, READ_COMMITTED)) == (
        labelled("zombie-committed", 3) + labelled("successor", 3))
    everything = values(read_to_end(bootstrap, topic, 1, READ_UNCOMMITTED))
    assert set(labelled("zombie-open", 3)) <= set(everything)  # written, then aborted
    assert b"zombie-late" not in everything


def test_fenced_zombie_cannot_end_its_transaction(shared_broker):
    """The zombie only talks to the coordinator (nothing left to produce):
    EndTxn is refused, and the successor's state is untouched."""
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-zombie-end")
    transactional_id = f"zombie-end-{uuid.uuid4().hex[:8]}"
    zombie = txn_producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    assert zombie.flush(TXN_TIMEOUT_S) == 0
    successor = txn_producer(bootstrap, transactional_id)
    with pytest.raises(KafkaException) as error:
        zombie.commit_transaction(TXN_TIMEOUT_S)
    assert fenced(error.value), error.value
    produce_in_transaction(successor, topic, [b"successor"])
    assert values(read_to_end(bootstrap, topic, 1, READ_COMMITTED)) == [b"successor"]


# -- kafka-python ------------------------------------------------------------------------------
def test_kafka_python_commit_and_abort(shared_broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KpTopicPartition

    bootstrap = shared_broker.bootstrap
    source, sink = create_topic(bootstrap, "txn-kp-in"), create_topic(bootstrap, "txn-kp-out")
    group = f"txn-kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:8]}",
                             max_block_ms=int(TXN_TIMEOUT_S * 1000))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for value in labelled("kp-commit", 10):
            producer.send(sink, value, partition=0)
        producer.send_offsets_to_transaction({KpTopicPartition(source, 0): OffsetAndMetadata(7, "", -1)}, group)
        producer.commit_transaction()
        producer.begin_transaction()
        for value in labelled("kp-abort", 10):
            producer.send(sink, value, partition=0)
        producer.flush()
        producer.send_offsets_to_transaction({KpTopicPartition(source, 0): OffsetAndMetadata(9, "", -1)}, group)
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)

    assert values(read_to_end(bootstrap, sink, 1, READ_COMMITTED)) == labelled("kp-commit", 10)
    assert values(read_to_end(bootstrap, sink, 1, READ_UNCOMMITTED)) == \
        labelled("kp-commit", 10) + labelled("kp-abort", 10)
    wait_until(lambda: committed_offset(bootstrap, group, source) == 7, 10, "the offset committed")

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        partition = KpTopicPartition(sink, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        assert [m.value for m in consumer] == labelled("kp-commit", 10)
        # ListOffsets under read_committed: the LSO, here the high watermark.
        assert consumer.end_offsets([partition])[partition] == 22
    finally:
        consumer.close()


# -- aiokafka ----------------------------------------------------------------------------------
def test_aiokafka_commit_and_abort(shared_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    bootstrap = shared_broker.bootstrap
    source, sink = create_topic(bootstrap, "txn-aio-in"), create_topic(bootstrap, "txn-aio-out")
    group = f"txn-aio-{uuid.uuid4().hex[:8]}"

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"aio-{uuid.uuid4().hex[:8]}")
        await producer.start()
        try:
            async with producer.transaction():
                for value in labelled("aio-commit", 10):
                    await producer.send(sink, value, partition=0)
                await producer.send_offsets_to_transaction({AioTopicPartition(source, 0): 11}, group)
            await producer.begin_transaction()
            for value in labelled("aio-abort", 10):
                await (await producer.send(sink, value, partition=0))
            await producer.send_offsets_to_transaction({AioTopicPartition(source, 0): 13}, group)
            await producer.abort_transaction()
        finally:
            await producer.stop()

        found = {}
        for isolation in (READ_COMMITTED, READ_UNCOMMITTED):
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                        enable_auto_commit=False, auto_offset_reset="earliest")
            await consumer.start()
            try:
                partition = AioTopicPartition(sink, 0)
                consumer.assign([partition])
                got: list[bytes] = []
                deadline = time.monotonic() + 20
                end = (await consumer.end_offsets([partition]))[partition]
                while await consumer.position(partition) < end:
                    assert time.monotonic() < deadline, f"{isolation}: position stuck below {end}"
                    batches = await consumer.getmany(partition, timeout_ms=200)
                    got += [m.value for m in batches.get(partition, [])]
                found[isolation] = got
            finally:
                await consumer.stop()
        return found[READ_COMMITTED], found[READ_UNCOMMITTED]

    committed, uncommitted = asyncio.run(asyncio.wait_for(run(), 60))
    assert committed == labelled("aio-commit", 10)
    assert uncommitted == labelled("aio-commit", 10) + labelled("aio-abort", 10)
    wait_until(lambda: committed_offset(bootstrap, group, source) == 11, 10, "the offset committed")


# -- timeouts ----------------------------------------------------------------------------------
# Short enough to wait for: the producer's transaction times out after 2 s,
# and the coordinator looks for timed-out transactions every 0.5 s.
TIMEOUT_SETTINGS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}
PRODUCER_TXN_TIMEOUT_MS = 2000


def test_coordinator_aborts_an_abandoned_transaction_after_its_timeout(tmp_path):
    broker = start_broker(tmp_path / "data", TIMEOUT_SETTINGS)
    try:
        bootstrap = broker.bootstrap
        topic = create_topic(bootstrap, "txn-timeout")
        stalled = txn_producer(bootstrap, f"stalled-{uuid.uuid4().hex[:8]}",
                               **{"transaction.timeout.ms": PRODUCER_TXN_TIMEOUT_MS})
        stalled.begin_transaction()
        for value in labelled("abandoned", 5):
            stalled.produce(topic, value, partition=0)
        assert stalled.flush(TXN_TIMEOUT_S) == 0
        committer = txn_producer(bootstrap)
        produce_in_transaction(committer, topic, labelled("later", 5))
        assert end_offset(bootstrap, topic, READ_COMMITTED) == 0

        started = time.monotonic()
        # The abort marker moves the LSO past everything: the later commit shows.
        wait_until(lambda: end_offset(bootstrap, topic, READ_COMMITTED) ==
                   end_offset(bootstrap, topic, READ_UNCOMMITTED), 15, "the timed-out transaction aborted")
        assert time.monotonic() - started < 10
        assert values(read_to_end(bootstrap, topic, 1, READ_COMMITTED)) == labelled("later", 5)

        with pytest.raises(KafkaException) as error:
            stalled.produce(topic, b"too-late", partition=0)
            stalled.flush(TXN_TIMEOUT_S)
            stalled.commit_transaction(TXN_TIMEOUT_S)
        # librdkafka reports the fence, or its transaction as aborted (abortable).
        code = error.value.args[0].code()
        assert code in FENCED_CODES or error.value.args[0].txn_requires_abort(), error.value
        assert b"too-late" not in values(read_to_end(bootstrap, topic, 1, READ_COMMITTED))
    except BaseException:
        print(broker.log())
        raise
    finally:
        broker.kill()


def test_offsets_for_times_under_read_committed_stops_at_the_lso(shared_broker):
    """Kafka answers a timestamp lookup only below the last fetchable
    offset: the LSO for read_committed, the high watermark otherwise."""
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, "txn-times")
    base = int(time.time() * 1000) - 60_000
    producer = txn_producer(bootstrap)
    producer.begin_transaction()
    for index in range(5):
        producer.produce(topic, b"open-%d" % index, partition=0, timestamp=base + index)
    assert producer.flush(TXN_TIMEOUT_S) == 0
    try:
        for isolation, expected in ((READ_UNCOMMITTED, 2), (READ_COMMITTED, -1)):
            consumer = reader(bootstrap, isolation)
            try:
                [found] = consumer.offsets_for_times([TopicPartition(topic, 0, base + 2)], timeout=10)
                assert found.offset == expected, isolation
            finally:
                consumer.close()
    finally:
        producer.commit_transaction(TXN_TIMEOUT_S)
    consumer = reader(bootstrap, READ_COMMITTED)
    try:
        [found] = consumer.offsets_for_times([TopicPartition(topic, 0, base + 2)], timeout=10)
        assert found.offset == 2
    finally:
        consumer.close()

"""`kcore transactions` against a real broker: a confluent-kafka
transactional producer's state, and a hanging transaction (open records no
coordinator knows of) aborted by hand so read_committed consumers get past it."""
from __future__ import annotations

import subprocess

from confluent_kafka import Producer

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.records import Record, build_batch
from tests.support.cli import kcore_cli
from tests.support.wire import WireClient, create_topic, produce

LATEST = -1
READ_COMMITTED = 1


def kcore(broker, *args: str) -> subprocess.CompletedProcess:
    return kcore_cli("transactions", *args, "--bootstrap-server", broker.bootstrap)


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()[1:]]


def latest_offset(client: WireClient, topic: str, isolation_level: int) -> int:
    response = client.request(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": isolation_level, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                            "timestamp": LATEST}]}]})
    return response.topics[0].partitions[0].offset


def test_list_and_describe_an_open_transaction(broker_factory):
    broker = broker_factory({"num.partitions": "1"})
    client = WireClient(broker.port)
    create_topic(client, "ledger")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "billing-1"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("ledger", b"debit", partition=0)
    producer.flush(10)

    listed = kcore(broker, "list")
    assert listed.returncode == 0, listed.stderr
    assert [r[0] for r in rows(listed.stdout)] == ["billing-1"]
    assert rows(listed.stdout)[0][3] == "Ongoing"

    described = kcore(broker, "describe", "--transactional-id", "billing-1")
    assert described.returncode == 0, described.stderr
    (row,) = rows(described.stdout)
    assert row[1] == "billing-1" and row[4] == "Ongoing" and row[-1] == "ledger-0"

    producers = kcore(broker, "describe-producers", "--topic", "ledger", "--partition", "0")
    assert producers.returncode == 0, producers.stderr
    assert rows(producers.stdout)[0][-1] == "0"  # the open transaction starts at offset 0

    producer.commit_transaction(10)
    (row,) = rows(kcore(broker, "describe", "--transactional-id", "billing-1").stdout)
    assert row[4] == "CompleteCommit" and row[-1] == "-"
    missing = kcore(broker, "describe", "--transactional-id", "nobody")
    assert missing.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr


def test_abort_a_hanging_transaction_moves_the_last_stable_offset(broker_factory):
    # Transaction verification (KIP-890) refuses the batch that makes the
    # hanging transaction below; off, as on brokers before Kafka 3.6 or with
    # clients that write transactional batches themselves, it hangs.
    broker = broker_factory({"num.partitions": "1",
                             "transaction.partition.verification.enable": "false"})
    client = WireClient(broker.port)
    create_topic(client, "ledger")
    produce(client, "ledger", build_batch([Record(value=b"before")]))
    # A transactional batch that no coordinator knows of: it hangs.
    hanging = build_batch([Record(value=b"hanging")], producer_id=4242, producer_epoch=3,
                          base_sequence=0, is_transactional=True)
    assert produce(client, "ledger", hanging).error_code == 0
    produce(client, "ledger", build_batch([Record(value=b"after")]))
    assert latest_offset(client, "ledger", READ_COMMITTED) == 1
    assert latest_offset(client, "ledger", 0) == 3

    wrong = kcore(broker, "abort", "--topic", "ledger", "--partition", "0", "--start-offset", "2")
    assert wrong.returncode == 1 and "no open transaction starts at offset 2" in wrong.stderr
    assert latest_offset(client, "ledger", READ_COMMITTED) == 1

    aborted = kcore(broker, "abort", "--topic", "ledger", "--partition", "0", "--start-offset", "1")
    assert aborted.returncode == 0, aborted.stderr
    assert "producer 4242 (epoch 3)" in aborted.stdout
    assert latest_offset(client, "ledger", READ_COMMITTED) == 4  # past the marker at 3
    producers = rows(kcore(broker, "describe-producers", "--topic", "ledger", "--partition",
                           "0").stdout)
    assert [(r[0], r[-1]) for r in producers] == [("4242", "-")]

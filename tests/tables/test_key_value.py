"""A topic with ``kcore.table.mode=key_value`` is written to the Iceberg
table ``kcore.<topic>`` by its broker, and pyiceberg reads it back: every
record once, in its partition's offset order, with its key, value,
headers and timestamp; aborted transactions never reach the table; turning
the mode on for a topic with data writes what it already holds."""
from __future__ import annotations

import datetime
import json
import urllib.request

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tests.support import BrokerProcess, free_port
from tests.support.cli import kcore_cli
from tests.support.compat import make_messages, unique_topic, wait_until
from tests.support.confluent import ADMIN_TIMEOUT_S, consume, produce
from tests.support.metrics import scrape
from tests.support.tables import table_rows, wait_for_offsets

PARTITIONS = 3
COUNT = 3000
WAIT_S = 30.0
TABLES_ON = {"kcore.table.mode": "key_value", "kcore.table.commit.interval.ms": "300"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    http_port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("tables") / "data",
                            {"http.listeners": f"http://127.0.0.1:{http_port}"}).start()
    process.metrics_url = f"http://127.0.0.1:{http_port}"
    yield process
    process.kill()


def table_metrics(url: str, topic: str) -> dict[str, float]:
    """kcore_table_* of ``topic``: lag summed over partitions, the counters."""
    found: dict[str, float] = {}
    for (name, labels), value in scrape(url).items():
        if name.startswith("kcore_table_") and dict(labels).get("topic") == topic:
            found[name] = found.get(name, 0) + value
    return found


def create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=configs)])[topic].result(ADMIN_TIMEOUT_S)


def ends_of(messages) -> dict[int, int]:
    return {p: sum(1 for m in messages if m.partition == p) for p in range(PARTITIONS)}


def test_every_record_lands_once_in_offset_order_with_its_columns(broker):
    topic = unique_topic("kv")
    create(broker.bootstrap, topic, TABLES_ON)
    messages = make_messages(COUNT, "kv", PARTITIONS)
    produce(broker.bootstrap, topic, messages)
    offsets = wait_for_offsets(broker.data_dir, topic, ends_of(messages))
    assert offsets == ends_of(messages)
    rows = table_rows(broker.data_dir, topic)
    for partition in range(PARTITIONS):
        sent = [m for m in messages if m.partition == partition]
        got = [row for row in rows if row["partition"] == partition]
        assert [row["offset"] for row in got] == list(range(len(sent)))
        assert [(row["key"], row["value"]) for row in got] == [(m.key, m.value) for m in sent]
        assert [[(h["key"], h["value"]) for h in row["headers"]] for row in got] == \
            [list(m.headers) for m in sent]
        assert [row["timestamp"] for row in got] == [
            datetime.datetime.fromtimestamp(m.timestamp / 1000, datetime.UTC) for m in sent]
    wait_until(lambda: table_metrics(broker.metrics_url, topic).get("kcore_table_lag_offsets") == 0,
               WAIT_S, "the table's lag back to 0")
    metrics = table_metrics(broker.metrics_url, topic)
    assert metrics["kcore_table_records_total"] == COUNT and metrics["kcore_table_commits_total"] >= 1
    with urllib.request.urlopen(f"{broker.metrics_url}/api/topics/{topic}", timeout=10) as answer:
        table = json.load(answer)["table"]  # what the console's topic page shows
    assert (table["name"], table["lag"], table["records"]) == (f"kcore.{topic}", 0, COUNT)


def test_aborted_transactions_never_reach_the_table(broker):
    topic = unique_topic("kv-txn")
    create(broker.bootstrap, topic, TABLES_ON)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{topic}-t"})
    producer.init_transactions(30)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(30):
            producer.produce(topic, f"{outcome}-{i}".encode(), partition=i % PARTITIONS)
        producer.flush(30)
        (producer.commit_transaction if outcome == "commit" else producer.abort_transaction)(30)
    # 30 records and one marker per partition and transaction: 10 + 1 each.
    wait_for_offsets(broker.data_dir, topic, {p: 33 for p in range(PARTITIONS)})
    values = [row["value"] for row in table_rows(broker.data_dir, topic)]
    assert len(values) == 60 and all(value.startswith(b"commit-") for value in values)


def test_turning_tables_on_writes_the_records_the_topic_already_holds(broker):
    topic = unique_topic("kv-backfill")
    create(broker.bootstrap, topic, {})
    messages = make_messages(COUNT, "bf", PARTITIONS)
    produce(broker.bootstrap, topic, messages)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in TABLES_ON.items()])
    admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    wait_for_offsets(broker.data_dir, topic, ends_of(messages))
    assert sorted(row["value"] for row in table_rows(broker.data_dir, topic)) == sorted(m.value for m in messages)


@pytest.mark.parametrize("name, value", [("kcore.table.mode", "parquet"), ("kcore.table.partition.by", "week"),
                                         ("kcore.table.commit.interval.ms", "10")])
def test_a_bad_table_config_is_refused_with_invalid_config(broker, name, value):
    with pytest.raises(KafkaException) as raised:
        create(broker.bootstrap, unique_topic("kv-bad"), {name: value})
    assert raised.value.args[0].name() == "INVALID_CONFIG"


def test_an_unreachable_catalog_is_retried_and_produce_and_fetch_go_on(tmp_path):
    http_port = free_port()
    broker = BrokerProcess(tmp_path / "data", {"http.listeners": f"http://127.0.0.1:{http_port}",
                                                "kcore.table.catalog.uri": f"http://127.0.0.1:{free_port()}/catalog",
                                                "schema.registry.listeners": ""}).start()
    try:
        topic = unique_topic("kv-nocatalog")
        create(broker.bootstrap, topic, TABLES_ON)
        messages = make_messages(300, "nc", PARTITIONS)
        produce(broker.bootstrap, topic, messages)
        assert sorted(m.value for m in consume(broker.bootstrap, topic, len(messages), range(PARTITIONS))) == \
            sorted(m.value for m in messages)
        wait_until(lambda: table_metrics(f"http://127.0.0.1:{http_port}", topic).get(
            "kcore_table_commit_errors_total", 0) >= 2, WAIT_S, "the writer reporting its failures")
        assert "table of " + topic in broker.log()
    finally:
        broker.kill()


def test_kcore_tables_describe_shows_the_snapshot_and_no_lag_once_caught_up(broker):
    topic = unique_topic("kv-cli")
    create(broker.bootstrap, topic, TABLES_ON)
    messages = make_messages(300, "cli", PARTITIONS)
    produce(broker.bootstrap, topic, messages)
    wait_for_offsets(broker.data_dir, topic, ends_of(messages))
    done = kcore_cli("tables", "describe", topic, "--log-dir", str(broker.data_dir),
                     "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"Table: kcore.{topic}") and "records: 300" in lines[1]
    rows = [line.split() for line in lines[3:]]
    assert rows == [[str(p), "100", "100", "0", "0.0"] for p in range(PARTITIONS)]
    missing = kcore_cli("tables", "describe", unique_topic("kv-none"), "--log-dir", str(broker.data_dir),
                        "--bootstrap-server", broker.bootstrap)
    assert missing.returncode == 1 and "has no table" in missing.stderr

"""The web console's test world: one real broker with the console on its
http listener and real data in it, produced and consumed by confluent-kafka.

* topic ORDERS (3 partitions): partition 0 holds 20 orders with a JSON
  value and two headers (text and binary), then one binary value; 1 and 2
  hold 10 text records each.
* group BILLING: a subscribed consumer read everything, committed
  COMMITTED per partition and left: Empty, with lag END - COMMITTED.
* group LIVE: a subscribed consumer that stays (Stable, one member).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support import BrokerProcess
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client, topic_configs

ORDERS_PARTITIONS = 3
END = {0: 21, 1: 10, 2: 10}
COMMITTED = {0: 5, 1: 10, 2: 3}
BINARY_VALUE = b"\x00\xff\x10\x80"
HTTP_TIMEOUT_S = 15.0
# A consumer joins, is assigned and reads 41 records in well under a second
# on loopback (no initial rebalance delay, see below); 30 s bounds it.
GROUP_TIMEOUT_S = 30.0
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
CHROMIUM = "/usr/bin/chromium"
# Headless, and nothing that reaches out of the machine (there is no network).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass
class Console:
    broker: BrokerProcess
    url: str
    orders: str
    billing: str
    live: str

    def call(self, method: str, path: str, body: object = None, raw: bytes | None = None,
             content_type: str = "application/json") -> tuple[int, dict]:
        """(status, JSON answer) of one console endpoint."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if exc.headers.get_content_type() == "application/json" else \
                {"text": text.decode()}

    def get(self, path: str) -> dict:
        status, answer = self.call("GET", path)
        assert status == 200, answer
        return answer


def fill_console_world(broker: BrokerProcess) -> tuple[str, str, str, Consumer]:
    """Create ORDERS, BILLING and LIVE (module doc) on ``broker``: their
    names, and LIVE's consumer, which the caller closes."""
    orders, billing, live = unique_topic("orders"), unique_topic("billing"), unique_topic("live")
    admin = admin_client(broker.bootstrap)
    admin.create_topics([NewTopic(orders, ORDERS_PARTITIONS, 1)])[orders].result(ADMIN_TIMEOUT_S)
    _produce_orders(broker.bootstrap, orders)
    consumer = _subscribed(broker.bootstrap, billing, orders)
    _read_all(consumer, sum(END.values()))
    consumer.commit(offsets=[TopicPartition(orders, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    consumer.close()
    live_consumer = _subscribed(broker.bootstrap, live, orders)
    try:
        _read_all(live_consumer, sum(END.values()))
    except BaseException:
        live_consumer.close()
        raise
    return orders, billing, live, live_consumer


def _produce_orders(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(END[0] - 1):
        producer.produce(topic, json.dumps({"order": i, "item": f"widget-{i}"}).encode(), f"order-{i}".encode(),
                         partition=0, headers=[("source", b"web"), ("trace", b"\x00\x01")])
    producer.produce(topic, BINARY_VALUE, b"blob", partition=0)
    for partition in (1, 2):
        for i in range(END[partition]):
            producer.produce(topic, f"plain text {partition}/{i}".encode(), None, partition=partition)
    assert producer.flush(GROUP_TIMEOUT_S) == 0


def _subscribed(bootstrap: str, group: str, topic: str) -> Consumer:
    # librdkafka heartbeats from its own thread; the poll interval is its
    # maximum (24 h) so that LIVE stays Stable through a whole (shuffled)
    # test session without polls.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "max.poll.interval.ms": 86_400_000})
    consumer.subscribe([topic])
    return consumer


def _read_all(consumer: Consumer, total: int) -> None:
    deadline = time.monotonic() + GROUP_TIMEOUT_S
    seen = 0
    while seen < total:
        assert time.monotonic() < deadline, f"read {seen} of {total} records"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen += 1


def topic_config_values(bootstrap: str, topic: str) -> dict[str, str]:
    """Each config of ``topic`` by name: its value (DescribeConfigs)."""
    admin = admin_client(bootstrap)  # kept: the futures fail once the client is collected
    return {name: entry.value for name, entry in topic_configs(admin, topic).items()}


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset per partition of ORDERS (-1001: none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(ORDERS_PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def screenshot(page, name: str) -> None:
    """For a person to look at: test-artifacts/console/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def filled_topic(bootstrap: str, prefix: str, partitions: int, per_partition: int) -> str:
    """A new topic with ``per_partition`` records in each partition."""
    topic = unique_topic(prefix)
    admin = admin_client(bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(ADMIN_TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for index in range(per_partition):
        for partition in range(partitions):
            producer.produce(topic, b"record-%d" % index, partition=partition)
    assert producer.flush(ADMIN_TIMEOUT_S) == 0
    return topic


def earliest_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """ListOffsets(earliest) of each partition, through librdkafka."""
    from confluent_kafka.admin import OffsetSpec
    admin = admin_client(bootstrap)  # kept alive until the answers are in
    answers = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest() for p in range(partitions)})
    return [answers[TopicPartition(topic, p)].result(ADMIN_TIMEOUT_S).offset for p in range(partitions)]

"""One real broker with the console on its http listener, real data in it
(produced and consumed by confluent-kafka), and the browser that reads it.

The world, shared by the API and browser tests of this directory:

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

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, NewTopic

from tests.support import BrokerProcess, free_port
from tests.support.compat import unique_topic
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client

ORDERS_PARTITIONS = 3
END = {0: 21, 1: 10, 2: 10}
COMMITTED = {0: 5, 1: 10, 2: 3}
BINARY_VALUE = b"\x00\xff\x10\x80"
HTTP_TIMEOUT_S = 15.0
# A consumer joins, is assigned and reads 41 records in well under a second
# on loopback (no initial rebalance delay, see below); 30 s bounds it.
GROUP_TIMEOUT_S = 30.0
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"


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


@pytest.fixture(scope="session")
def console(tmp_path_factory) -> Console:
    http_port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("console") / "data",
                           {"http.listeners": f"http://127.0.0.1:{http_port}",
                            # Groups form at once: the tests wait for two.
                            "group.initial.rebalance.delay.ms": "0"}).start()
    live_consumer = None
    try:
        orders, billing, live = unique_topic("orders"), unique_topic("billing"), unique_topic("live")
        admin = admin_client(broker.bootstrap)
        admin.create_topics([NewTopic(orders, ORDERS_PARTITIONS, 1)])[orders].result(ADMIN_TIMEOUT_S)
        _produce_orders(broker.bootstrap, orders)
        consumer = _subscribed(broker.bootstrap, billing, orders)
        _read_all(consumer, sum(END.values()))
        consumer.commit(offsets=[TopicPartition(orders, p, o) for p, o in COMMITTED.items()], asynchronous=False)
        consumer.close()
        live_consumer = _subscribed(broker.bootstrap, live, orders)
        _read_all(live_consumer, sum(END.values()))
        yield Console(broker, f"http://127.0.0.1:{http_port}", orders, billing, live)
    finally:
        if live_consumer is not None:
            live_consumer.close()
        broker.kill()


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = admin_client(bootstrap)  # kept: the futures fail once the client is collected
    entries = admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    return {name: entry.value for name, entry in entries.items()}


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset per partition of ORDERS (-1001: none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(ORDERS_PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


CHROMIUM = "/usr/bin/chromium"
# Headless, and nothing that reaches out of the machine (there is no network).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# Module scope: Playwright's sync API runs an event loop in this thread
# while it is started, and asyncio.run() in any later test would refuse to
# start beside it.
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (make system-deps)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console):
    """A fresh page of the console; what the page's script throws fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


def screenshot(page, name: str) -> None:
    """For a person to look at: test-artifacts/console/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

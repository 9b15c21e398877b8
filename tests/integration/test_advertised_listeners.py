"""advertised.listeners reach clients as written: a broker that advertises
``localhost`` is ``localhost`` in Metadata (KafkaJS and other clients
compare it with their bootstrap host), and clients that bootstrap there
produce and consume through it."""
from __future__ import annotations

from confluent_kafka import Consumer, Producer

from tests.support import BrokerProcess, free_port
from tests.support.compat import unique_topic


def test_localhost_is_advertised_as_localhost(tmp_path):
    port = free_port()
    broker = BrokerProcess(tmp_path / "data", {"advertised.listeners": f"PLAINTEXT://localhost:{port}"},
                           port=port).start()
    try:
        bootstrap = f"localhost:{port}"
        producer = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
        metadata = producer.list_topics(timeout=10)
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("localhost", port)]
        topic = unique_topic("advertised")
        producer.produce(topic, b"through localhost")
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                             "broker.address.family": "v4"})
        consumer.subscribe([topic])
        values = []
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
                break
        consumer.close()
        assert values == [b"through localhost"]
    finally:
        broker.kill()

"""Client settings per security protocol and SASL mechanism, in each real
client's own vocabulary."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer

from tests.support.secure_broker import SecureBroker

COUNT = 50


def confluent_config(broker: SecureBroker, listener: str, mechanism: str | None = None,
                     user: str | None = None, password: str | None = None,
                     client_cert: bool = False) -> dict:
    protocol = "SSL" if listener == "MTLS" else listener
    config = {"bootstrap.servers": broker.address(listener), "security.protocol": protocol,
              "socket.timeout.ms": 10000, "message.timeout.ms": 15000,
              "reconnect.backoff.max.ms": 1000}
    if "SSL" in protocol:
        config["ssl.ca.location"] = str(broker.pki.ca_file)
    if client_cert:
        config["ssl.certificate.location"] = str(broker.pki.client_cert_file)
        config["ssl.key.location"] = str(broker.pki.client_key_file)
    if mechanism is not None:
        config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    return config


def kafka_python_config(broker: SecureBroker, listener: str, mechanism: str | None = None,
                        user: str | None = None, password: str | None = None) -> dict:
    config = {"bootstrap_servers": broker.address(listener), "security_protocol": listener,
              "request_timeout_ms": 15000}
    if "SSL" in listener:
        config["ssl_cafile"] = str(broker.pki.ca_file)
    if mechanism is not None:
        config.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                       "sasl_plain_password": password})
    return config


def aiokafka_config(broker: SecureBroker, listener: str, mechanism: str | None = None,
                    user: str | None = None, password: str | None = None) -> dict:
    import ssl

    config: dict = {"bootstrap_servers": broker.address(listener), "security_protocol": listener,
                    "request_timeout_ms": 15000}
    if "SSL" in listener:
        config["ssl_context"] = ssl.create_default_context(cafile=str(broker.pki.ca_file))
    if mechanism is not None:
        config.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                       "sasl_plain_password": password})
    return config


def produce_and_consume(config: dict, topic: str, count: int = COUNT, size: int = 0) -> list[bytes]:
    producer = Producer(config)
    failures: list = []
    for i in range(count):
        producer.produce(topic, b"value-%d" % i + b"x" * size,
                         on_delivery=lambda err, msg: failures.append(err) if err else None)
    assert producer.flush(20) == 0 and not failures, failures
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values

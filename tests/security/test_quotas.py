"""Client quotas against real clients: a producer and a consumer above
their byte rate are slowed to it (measured over a bounded window), other
client ids on the same broker are not; quotas survive restarts; bad
entities are refused with INVALID_REQUEST."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.acls import kcore_quotas
from tests.support.wire import WireClient, create_topic

QUOTA = 1024 * 1024  # bytes per second
WINDOW_S = 5.0
VALUE = b"x" * 10_000


def set_quota(broker, entity: list[str], config: str) -> None:
    result = kcore_quotas(broker, "alter", *entity, "--add-config", config)
    assert result.returncode == 0, result.stderr


def produce_for(bootstrap: str, topic: str, client_id: str, seconds: float) -> float:
    """Acknowledged record bytes per second of a producer that always has
    more to send, over ``seconds``."""
    acked = 0

    def delivered(error, message) -> None:
        nonlocal acked
        if error is None:
            acked += len(message.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "linger.ms": 5, "batch.size": 16 * 1024, "compression.type": "none",
                         "max.in.flight.requests.per.connection": 5,
                         "queue.buffering.max.kbytes": 4096})
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    elapsed = time.monotonic() - started
    counted = acked  # what arrived within the window
    producer.flush(30)
    return counted / elapsed


def test_producer_over_its_quota_is_slowed_to_it_and_others_are_not(broker_factory):
    broker = broker_factory({"num.partitions": "1"})
    set_quota(broker, ["--entity-type", "clients", "--entity-name", "slow"],
              f"producer_byte_rate={QUOTA}")
    # warm-up: metadata, topic creation, connections
    produce_for(broker.bootstrap, "quota-topic", "warm", 0.5)
    slow = produce_for(broker.bootstrap, "quota-topic", "slow", WINDOW_S)
    print(f"produce at a {QUOTA} B/s quota: {slow:.0f} B/s ({slow / QUOTA:.3f} x)")
    assert 0.9 * QUOTA <= slow <= 1.1 * QUOTA, f"{slow / QUOTA:.2f} x the quota"
    fast = produce_for(broker.bootstrap, "quota-topic", "fast", 2.0)
    assert fast > 3 * QUOTA, f"an unthrottled client id got only {fast / QUOTA:.2f} x the quota"


def test_throttled_produce_answers_with_throttle_time(broker_factory):
    broker = broker_factory({"num.partitions": "1"})
    set_quota(broker, ["--entity-type", "clients", "--entity-default"], "producer_byte_rate=10000")
    client = WireClient(broker.port)  # client id kcore-tests: the default quota applies
    create_topic(client, "t")
    from tests.support.wire import batch, produce_body
    response = client.request(ApiKey.PRODUCE, 8, produce_body("t", 0, bytes(batch([VALUE] * 5))))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    # 50 kB against 10 kB/s: ~4 s owed
    assert 3000 <= response.throttle_time_ms <= 5000, response.throttle_time_ms


def consume_for(bootstrap: str, topic: str, client_id: str, seconds: float) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "group.id": f"g-{client_id}", "enable.auto.commit": False,
                         "fetch.max.bytes": 1024 * 1024 + 512, "max.partition.fetch.bytes": 64 * 1024,
                         "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        received = 0
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            for message in consumer.consume(1000, 0.1):
                if message.error() is None:
                    received += len(message.value())
        return received / (time.monotonic() - started)
    finally:
        consumer.close()


def test_consumer_over_its_quota_is_slowed_to_it_and_others_are_not(broker_factory):
    broker = broker_factory({"num.partitions": "1"})
    # 15 MB waiting: more than either consumer can read in its window
    produce_for(broker.bootstrap, "fetched", "loader", 0.1)
    # batches of at most 16 kB: a fetch of 64 kB per partition then holds several
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                         "batch.size": 16 * 1024})
    for _ in range(1500):
        while True:
            try:
                producer.produce("fetched", VALUE)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    set_quota(broker, ["--entity-type", "clients", "--entity-name", "reader"],
              f"consumer_byte_rate={QUOTA}")
    slow = consume_for(broker.bootstrap, "fetched", "reader", WINDOW_S)
    print(f"fetch at a {QUOTA} B/s quota: {slow:.0f} B/s ({slow / QUOTA:.3f} x)")
    assert 0.9 * QUOTA <= slow <= 1.1 * QUOTA, f"{slow / QUOTA:.2f} x the quota"
    fast = consume_for(broker.bootstrap, "fetched", "other", 2.0)
    assert fast > 3 * QUOTA, f"an unthrottled client id got only {fast / QUOTA:.2f} x the quota"


def test_quotas_describe_and_survive_a_restart(broker_factory):
    broker = broker_factory()
    set_quota(broker, ["--entity-type", "users", "--entity-name", "alice",
                       "--entity-type", "clients", "--entity-default"],
              "producer_byte_rate=2048,request_percentage=25")
    set_quota(broker, ["--entity-type", "clients", "--entity-name", "app"],
              "consumer_byte_rate=4096")
    broker.restart()
    described = kcore_quotas(broker, "describe")
    assert described.returncode == 0
    assert ("Quota configs for user=alice, client-id=<default> are "
            "producer_byte_rate=2048,request_percentage=25") in described.stdout
    assert "Quota configs for client-id=app are consumer_byte_rate=4096" in described.stdout
    removed = kcore_quotas(broker, "alter", "--entity-type", "clients", "--entity-name", "app",
                           "--delete-config", "consumer_byte_rate")
    assert removed.returncode == 0
    only_users = kcore_quotas(broker, "describe", "--entity-type", "clients",
                              "--entity-name", "app")
    assert only_users.stdout == ""


def _entry(entity: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]]) -> dict:
    return {"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
            "ops": [{"key": key, "value": value, "remove": remove} for key, value, remove in ops]}


def test_malformed_quota_entities_get_invalid_request_and_change_nothing(broker):
    client = WireClient(broker.port)
    entries = [
        _entry([("user", "alice")], [("producer_byte_rate", 1000.0, False)]),    # valid
        _entry([("group", "g")], [("producer_byte_rate", 1000.0, False)]),       # unknown type
        _entry([], [("producer_byte_rate", 1000.0, False)]),                     # empty entity
        _entry([("user", "a"), ("user", "b")], [("producer_byte_rate", 1.0, False)]),
        _entry([("user", "")], [("producer_byte_rate", 1000.0, False)]),         # empty name
        _entry([("user", "bob")], [("producer_bytes", 1000.0, False)]),          # unknown key
        _entry([("user", "bob")], [("consumer_byte_rate", -1.0, False)]),        # negative
    ]
    response = client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": entries,
                                                              "validate_only": False})
    codes = [entry.error_code for entry in response.entries]
    assert codes == [ErrorCode.NONE] + [ErrorCode.INVALID_REQUEST] * (len(entries) - 1)
    assert all(entry.error_message for entry in response.entries[1:])
    described = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [],
                                                                  "strict": False})
    assert described.error_code == ErrorCode.NONE
    assert [[(e.entity_type, e.entity_name) for e in entry.entity]
            for entry in described.entries] == [[("user", "alice")]]
    bad_filter = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {
        "components": [{"entity_type": "topic", "match_type": 0, "match": "x"}], "strict": False})
    assert bad_filter.error_code == ErrorCode.INVALID_REQUEST
    bad_match = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {
        "components": [{"entity_type": "user", "match_type": 7, "match": None}], "strict": False})
    assert bad_match.error_code == ErrorCode.INVALID_REQUEST


def test_validate_only_stores_nothing(broker):
    client = WireClient(broker.port)
    response = client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {
        "entries": [_entry([("client-id", "x")], [("producer_byte_rate", 5.0, False)])],
        "validate_only": True})
    assert response.entries[0].error_code == ErrorCode.NONE
    described = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, {"components": [], "strict": False})
    assert described.entries == []


def _describe_broker_configs(client: WireClient):
    started = time.monotonic()
    response = client.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    assert response.results[0].error_code == ErrorCode.NONE
    return response.throttle_time_ms, time.monotonic() - started


def test_request_percentage_throttles_busy_clients_only(broker):
    set_quota(broker, ["--entity-type", "clients", "--entity-name", "busy"],
              "request_percentage=1")  # 10 ms of broker time per second
    busy = WireClient(broker.port, client_id="busy")
    deadline = time.monotonic() + 10
    throttle_ms = 0
    while not throttle_ms and time.monotonic() < deadline:
        throttle_ms, _ = _describe_broker_configs(busy)
    assert throttle_ms > 0, "no throttle within 10 s of back-to-back DescribeConfigs"
    # the connection was muted: the next answer waits out most of the throttle
    _, waited_s = _describe_broker_configs(busy)
    assert waited_s >= 0.8 * throttle_ms / 1000
    free = WireClient(broker.port, client_id="free")
    answers = [_describe_broker_configs(free) for _ in range(50)]
    assert all(throttle == 0 for throttle, _ in answers)

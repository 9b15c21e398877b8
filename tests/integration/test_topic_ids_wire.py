"""Topic ids (KIP-516) against a real single-node broker: CreateTopics v7
says the id, Metadata v10+ answers it and v12+ looks topics up by it,
DeleteTopics v6 deletes by it, Produce v13 appends by it, and a topic
deleted and created again under its name is a new id. Exact requests,
then the real clients: confluent-kafka's describe_topics, kafka-python's
describe_topics by name and by id."""
from __future__ import annotations

import uuid

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from kcore.metadata import NO_TOPIC_ID
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.wire import WireClient, batch

UNKNOWN = uuid.UUID(int=12345)


def create(client: WireClient, name: str, version: int = 7, partitions: int = 2, **extra):
    return client.request(ApiKey.CREATE_TOPICS, version, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": [{"name": "retention.ms", "value": "60000"}]}],
        "timeout_ms": 10000, **extra}).topics[0]


def metadata(client: WireClient, version: int, topics: list[dict] | None):
    return client.request(ApiKey.METADATA, version, {"topics": topics, "allow_auto_topic_creation": False})


def test_create_v7_answers_the_id_metadata_tells_and_v12_finds_by(broker):
    client = WireClient(broker.port)
    try:
        created = create(client, "ids")
        assert created.error_code == E.NONE and created.topic_id != NO_TOPIC_ID
        # KIP-525: counts and every config with its source.
        assert (created.num_partitions, created.replication_factor) == (2, 1)
        configs = {c.name: c for c in created.configs}
        assert configs["retention.ms"].value == "60000" and configs["retention.ms"].config_source == 1
        assert configs["cleanup.policy"].config_source == 5  # DEFAULT_CONFIG
        for version in (10, 11, 12, 13):
            found = metadata(client, version, [{"name": "ids"}]).topics[0]
            assert (found.name, found.topic_id, len(found.partitions)) == ("ids", created.topic_id, 2)
        assert metadata(client, 9, [{"name": "ids"}]).topics[0].topic_id == NO_TOPIC_ID  # before v10
        by_id = metadata(client, 12, [{"name": None, "topic_id": created.topic_id},
                                      {"name": None, "topic_id": UNKNOWN}])
        answers = {t.topic_id: (t.name, t.error_code) for t in by_id.topics}
        assert answers == {created.topic_id: ("ids", E.NONE), UNKNOWN: (None, E.UNKNOWN_TOPIC_ID)}
        assert metadata(client, 13, None).error_code == E.NONE
    finally:
        client.close()


def test_validate_only_answers_configs_but_no_id_and_a_refusal_no_id(broker):
    client = WireClient(broker.port)
    try:
        checked = create(client, "checked", validate_only=True)
        assert (checked.error_code, checked.topic_id, checked.num_partitions) == (E.NONE, NO_TOPIC_ID, 2)
        assert checked.configs
        assert metadata(client, 12, [{"name": "checked"}]).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        create(client, "twice")
        again = create(client, "twice")
        assert (again.error_code, again.topic_id, again.num_partitions) == (E.TOPIC_ALREADY_EXISTS, NO_TOPIC_ID, -1)
        assert create(client, "old", version=4).error_code == E.NONE  # before v5: neither
    finally:
        client.close()


def test_ids_before_v12_are_an_invalid_request_not_a_closed_connection(broker):
    client = WireClient(broker.port)
    try:
        answer = metadata(client, 11, [{"name": "x", "topic_id": UNKNOWN}])
        assert [t.error_code for t in answer.topics] == [E.INVALID_REQUEST]
        answer = metadata(client, 13, [{"name": None, "topic_id": NO_TOPIC_ID}])
        assert (answer.error_code, answer.topics[0].error_code) == (E.INVALID_REQUEST, E.INVALID_REQUEST)
        assert metadata(client, 13, None).brokers  # the connection serves on
    finally:
        client.close()


def delete(client: WireClient, topics: list[dict], version: int = 6):
    body = {"topics": topics, "topic_names": [t["name"] for t in topics if t.get("name")],
            "timeout_ms": 10000}
    return {(r.name, r.topic_id): (r.error_code, r.error_message)
            for r in client.request(ApiKey.DELETE_TOPICS, version, body).responses}


def test_delete_v6_by_id_by_name_and_what_it_refuses(broker):
    client = WireClient(broker.port)
    try:
        first = create(client, "phoenix").topic_id
        other = create(client, "other").topic_id
        assert delete(client, [{"name": None, "topic_id": first}]) == {("phoenix", first): (E.NONE, None)}
        second = create(client, "phoenix").topic_id
        assert second not in (first, NO_TOPIC_ID)
        # The old id names nothing now; the new topic stays.
        assert delete(client, [{"name": None, "topic_id": first}]) == {
            (None, first): (E.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")}
        assert metadata(client, 12, [{"name": "phoenix"}]).topics[0].topic_id == second
        refused = delete(client, [{"name": None, "topic_id": NO_TOPIC_ID},
                                  {"name": "phoenix", "topic_id": second},
                                  {"name": None, "topic_id": other}, {"name": None, "topic_id": other}])
        assert {key: code for key, (code, _) in refused.items()} == {
            (None, NO_TOPIC_ID): E.INVALID_REQUEST, ("phoenix", second): E.INVALID_REQUEST,
            (None, other): E.INVALID_REQUEST}
        assert delete(client, [{"name": "phoenix"}]) == {("phoenix", second): (E.NONE, None)}
        assert delete(client, [{"name": "gone"}], version=5)[("gone", NO_TOPIC_ID)][0] == E.UNKNOWN_TOPIC_OR_PARTITION
        assert delete(client, [{"name": "other"}], version=3) == {("other", NO_TOPIC_ID): (E.NONE, None)}
    finally:
        client.close()


def test_confluent_kafka_describes_and_deletes_by_id(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("described", 3, 1)])["described"].result(30)
    client = WireClient(broker.port)
    try:
        topic_id = metadata(client, 12, [{"name": "described"}]).topics[0].topic_id
    finally:
        client.close()
    description = admin.describe_topics(TopicCollection(["described"]))["described"].result(30)
    uid = description.topic_id  # librdkafka prints ids in standard base64: compare the bits
    bits = [value & (2**64 - 1) for value in (uid.get_most_significant_bits(), uid.get_least_significant_bits())]
    assert uuid.UUID(int=bits[0] << 64 | bits[1]) == topic_id
    assert len(description.partitions) == 3
    listed = admin.list_topics("described", timeout=10).topics["described"]
    assert len(listed.partitions) == 3
    admin.delete_topics(["described"], operation_timeout=10)["described"].result(30)
    assert "described" not in admin.list_topics(timeout=10).topics


def test_kafka_python_describes_topics_by_name_and_by_id(broker):
    """kafka-python 3 asks by uuid.UUID with Metadata v12+ (KIP-516)."""
    client = WireClient(broker.port)
    try:
        topic_id = create(client, "kp").topic_id
    finally:
        client.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (by_name,) = admin.describe_topics(["kp"])
        (by_id,) = admin.describe_topics([topic_id])
        for described in (by_name, by_id):
            assert described["name"] == "kp" and len(described["partitions"]) == 2
            assert described["topic_id"] == str(topic_id)  # kafka-python gives the UUID as text
        (unknown,) = admin.describe_topics([UNKNOWN])
        assert (unknown["name"], unknown["error_code"]) == (None, E.UNKNOWN_TOPIC_ID)
    finally:
        admin.close()


def produce_body(topic_data: list[dict], acks: int = -1) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 5000, "topic_data": topic_data}


def test_produce_v9_to_v13_append_and_v13_names_topics_by_id(broker):
    client = WireClient(broker.port)
    try:
        topic_id = create(client, "by-id", partitions=1).topic_id
        for version in (8, 9, 10, 11, 12):
            answer = client.request(ApiKey.PRODUCE, version, produce_body([
                {"name": "by-id", "partition_data": [{"index": 0, "records": bytes(batch([b"x"]))}]}]))
            part = answer.responses[0].partition_responses[0]
            assert (answer.responses[0].name, part.error_code, part.base_offset) == ("by-id", E.NONE, version - 8)
        answer = client.request(ApiKey.PRODUCE, 13, produce_body([
            {"topic_id": topic_id, "partition_data": [{"index": 0, "records": bytes(batch([b"y"]))}]},
            {"topic_id": UNKNOWN, "partition_data": [{"index": 0, "records": bytes(batch([b"z"]))}]}]))
        found = {r.topic_id: r.partition_responses[0] for r in answer.responses}
        assert (found[topic_id].error_code, found[topic_id].base_offset) == (E.NONE, 5)
        assert found[UNKNOWN].error_code == E.UNKNOWN_TOPIC_ID
        # A single node leads everything: no leader hints to give.
        assert answer.node_endpoints == [] and found[topic_id].current_leader.leader_id == -1
    finally:
        client.close()

"""DescribeTopicPartitions (KIP-966) against a real single-node broker:
pages bounded by the request's and the broker's partition limits, the
cursor that walks them, the refusals Kafka answers (a cursor outside the
topics named, an unknown or unauthorized topic), and kafka-python's
describe_topic_partitions walking every page."""
from __future__ import annotations

from kafka import KafkaAdminClient

from kcore.metadata import NO_TOPIC_ID
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.acls import secured_broker
from tests.support.wire import WireClient, create_topic


def describe(client: WireClient, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None):
    return client.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
        "topics": [{"name": name} for name in names], "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}})


def pages(client: WireClient, names: list[str], limit: int) -> list[list[tuple[str, list[int]]]]:
    """Every page a client following next_cursor reads: [(topic, partitions)] each."""
    found, cursor = [], None
    for _ in range(50):
        answer = describe(client, names, limit, cursor)
        found.append([(t.name, [p.partition_index for p in t.partitions]) for t in answer.topics])
        if answer.next_cursor is None:
            return found
        cursor = (answer.next_cursor.topic_name, answer.next_cursor.partition_index)
    raise AssertionError("the cursor never ran out")


def test_pages_split_inside_a_topic_and_between_topics(broker):
    client = WireClient(broker.port)
    try:
        create_topic(client, "a", partitions=5)
        create_topic(client, "b", partitions=2)
        assert pages(client, ["b", "a"], 3) == [
            [("a", [0, 1, 2])], [("a", [3, 4]), ("b", [0])], [("b", [1])]]
        # Exactly full after "a": the next page starts at b-0.
        assert pages(client, ["a", "b"], 5) == [[("a", [0, 1, 2, 3, 4])], [("b", [0, 1])]]
        whole = describe(client, ["a"])
        topic = whole.topics[0]
        assert whole.next_cursor is None and topic.topic_id != NO_TOPIC_ID
        assert [(p.leader_id, p.replica_nodes, p.isr_nodes, p.eligible_leader_replicas)
                for p in topic.partitions][0] == (0, [0], [0], [])  # broker.id 0
        assert topic.topic_authorized_operations != -2**31
        # No topics named: every topic (the internal ones too), a page at a time.
        every = [name for page in pages(client, [], 1000) for name, _ in page]
        assert every == sorted(every) and {"a", "b"} <= set(every)
        # A limit of 0 or less still shows one partition, as Kafka's max(limit, 1).
        assert pages(client, ["b"], 0) == [[("b", [0])], [("b", [1])]]
    finally:
        client.close()


def test_refusals_unknown_topics_and_bad_cursors(broker):
    client = WireClient(broker.port)
    try:
        create_topic(client, "known", partitions=2)
        answer = describe(client, ["known", "nope", "bad name!"])
        assert {t.name: (t.error_code, len(t.partitions)) for t in answer.topics} == {
            "known": (E.NONE, 2), "nope": (E.UNKNOWN_TOPIC_OR_PARTITION, 0),
            "bad name!": (E.INVALID_TOPIC_EXCEPTION, 0)}
        for cursor in (("other", 0), ("known", -1)):
            refused = describe(client, ["known"], cursor=cursor)
            assert [(t.name, t.error_code) for t in refused.topics] == [("known", E.INVALID_REQUEST)]
        assert describe(client, ["known"], cursor=("known", 1)).topics[0].partitions[0].partition_index == 1
    finally:
        client.close()


def test_the_broker_limit_bounds_what_a_request_asks(broker_factory):
    server = broker_factory({"max.request.partition.size.limit": "2"})
    client = WireClient(server.port)
    try:
        create_topic(client, "wide", partitions=3)
        assert pages(client, ["wide"], 2000) == [[("wide", [0, 1])], [("wide", [2])]]
    finally:
        client.close()


def test_a_topic_the_principal_may_not_describe_is_refused_without_its_id(broker_factory):
    server = secured_broker(broker_factory, ["secret"])
    client = WireClient(server.port)
    try:
        refused = describe(client, ["secret"]).topics[0]
        assert (refused.name, refused.error_code, refused.topic_id) == (
            "secret", E.TOPIC_AUTHORIZATION_FAILED, NO_TOPIC_ID)
        assert [t.name for t in describe(client, []).topics] == []  # every topic: only describable ones
    finally:
        client.close()


def test_kafka_python_walks_the_pages(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        client = WireClient(broker.port)
        try:
            create_topic(client, "walked", partitions=7)
        finally:
            client.close()
        seen, cursor = [], None
        for _ in range(10):
            page = admin.describe_topic_partitions(["walked"], response_partition_limit=3, cursor=cursor)
            seen += [p["partition_index"] for t in page["topics"] for p in t["partitions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(range(7))
    finally:
        admin.close()

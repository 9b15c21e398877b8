"""Metadata answers are encoded once per metadata cache state: the cached
bytes decode to what a fresh answer says, and every update of the cache
invalidates them. Topic ids (v10+): answered from the cache, asked for by
id from v12, refused as Kafka refuses them before."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kcore import protocol
from kcore.handlers import metadata
from kcore.metadata import NO_TOPIC_ID, BrokerInfo, PartitionState
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.header import RequestHeader
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.topic_ids import CachedTopicIds

BROKERS = [BrokerInfo(1, "127.0.0.1", 9092, None), BrokerInfo(2, "127.0.0.1", 9093, "r1")]


def topic_id(t: int) -> uuid.UUID:
    return uuid.UUID(int=t + 1)


def states(leader: int, topics: int = 3, partitions: int = 40) -> list[PartitionState]:
    return [PartitionState(f"t{t}", p, leader, 5, (1, 2), (1, 2, 3), 7, 1, topic_id(t))
            for t in range(topics) for p in range(partitions)]


def broker_with(cache: MetadataCache) -> SimpleNamespace:
    controller = SimpleNamespace(cluster_id="c1", topic=lambda name: None, topic_names=list)
    return SimpleNamespace(replica_manager=SimpleNamespace(metadata_cache=cache),
                           config={"auto.create.topics.enable": False}, controller=controller,
                           topic_ids=CachedTopicIds(cache), authorizer=None)


def ask(broker, version: int, topics: list | None, operations: bool = False) -> dict:
    """``topics``: names, or (name, topic id) pairs."""
    asked = None if topics is None else [
        SimpleNamespace(name=t[0], topic_id=t[1]) if isinstance(t, tuple)
        else SimpleNamespace(name=t, topic_id=NO_TOPIC_ID) for t in topics]
    body = SimpleNamespace(topics=asked,
                           allow_auto_topic_creation=False,
                           include_cluster_authorized_operations=operations,
                           include_topic_authorized_operations=operations)
    context = SimpleNamespace(listener="PLAINTEXT", principal="User:ANONYMOUS")
    answer = asyncio.run(metadata.handle(broker, context, SimpleNamespace(api_version=version, body=body)))
    header = RequestHeader(ApiKey.METADATA, version, 11, "test")
    frame = b"".join(bytes(chunk) for chunk in protocol.encode_response(header, answer))
    _, decoded = protocol.decode_response(ApiKey.METADATA, version, memoryview(frame)[4:])
    return protocol.to_dict(decoded)


def test_a_cached_answer_decodes_like_a_fresh_one_and_an_update_replaces_it():
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    for version in (1, 5, 8):
        for topics in (None, ["t1"], ["t2", "t0"]):
            first = ask(broker, version, topics)
            assert ask(broker, version, topics) == first
            assert len(first["topics"]) == (3 if topics is None else len(topics))
    assert cache.responses
    cache.update(1, BROKERS, states(leader=2))
    assert not cache.responses
    after = ask(broker, 8, ["t1"])
    assert {p["leader_id"] for p in after["topics"][0]["partitions"]} == {2}


def test_an_answer_naming_an_unknown_topic_is_not_kept():
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    answer = ask(broker, 8, ["t0", "nope"])
    assert answer["topics"][1]["error_code"] == protocol.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert not cache.responses


def test_authorized_operations_asked_for_are_cached_apart():
    """v8 with and without authorized operations (KIP-430) are two answers:
    INT32_MIN when not asked, every operation without an authorizer."""
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    plain = ask(broker, 8, ["t1"])
    asked = ask(broker, 8, ["t1"], operations=True)
    assert plain["cluster_authorized_operations"] == -2**31
    assert plain["topics"][0]["topic_authorized_operations"] == -2**31
    # Bit per AclOperation code: CREATE (5), then ALTER (7) .. IDEMPOTENT_WRITE (12).
    assert asked["cluster_authorized_operations"] == 0b1_1111_1010_0000
    # READ (3) .. ALTER_CONFIGS (11) but CLUSTER_ACTION (9).
    assert asked["topics"][0]["topic_authorized_operations"] == 0b1101_1111_1000
    assert ask(broker, 8, ["t1"]) == plain


def test_v10_and_later_answer_each_topics_id_and_a_zero_id_for_an_unknown_topic():
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    for version in (10, 11, 12, 13):
        answer = ask(broker, version, ["t1", "nope"])
        assert [(t["name"], t["topic_id"], t["error_code"]) for t in answer["topics"]] == [
            ("t1", topic_id(1), 0), ("nope", NO_TOPIC_ID, protocol.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert answer["error_code"] == 0


def test_v12_asks_by_id_and_an_unknown_id_gets_a_null_name():
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    unknown = uuid.UUID(int=99)
    answer = ask(broker, 12, [(None, topic_id(2)), (None, unknown)])
    found = {t["topic_id"]: t for t in answer["topics"]}
    assert (found[topic_id(2)]["name"], found[topic_id(2)]["error_code"]) == ("t2", 0)
    assert len(found[topic_id(2)]["partitions"]) == 40
    assert (found[unknown]["name"], found[unknown]["error_code"]) == (None, protocol.ErrorCode.UNKNOWN_TOPIC_ID)
    # Once an id is asked for, names asked for alongside do not count (Kafka's rule).
    mixed = ask(broker, 13, [(None, topic_id(0)), ("t1", NO_TOPIC_ID)])
    assert [t["name"] for t in mixed["topics"]] == ["t0"]


def test_ids_or_null_names_before_v12_and_null_names_without_ids_are_invalid_requests():
    cache = MetadataCache()
    cache.update(1, BROKERS, states(leader=1))
    broker = broker_with(cache)
    for version, topics in ((10, [("t1", topic_id(1))]), (11, [(None, topic_id(1))]),
                            (12, [(None, NO_TOPIC_ID)]), (13, [("t0", NO_TOPIC_ID), (None, NO_TOPIC_ID)])):
        answer = ask(broker, version, topics)
        assert [t["error_code"] for t in answer["topics"]] == [protocol.ErrorCode.INVALID_REQUEST] * len(topics)
        assert answer["brokers"] == []
        assert answer["error_code"] == (protocol.ErrorCode.INVALID_REQUEST if version >= 13 else 0)

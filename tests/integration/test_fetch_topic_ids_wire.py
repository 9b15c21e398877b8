"""Fetch v13-v18 against a real single-node broker: topics named by id in
the request, its forgotten topics and the answer (KIP-516); an unknown id
answered UNKNOWN_TOPIC_ID, in a full fetch and in a session; a session
whose topic is deleted and created again under its name answered
INCONSISTENT_TOPIC_ID and able to forget the old id; v15's replica_state;
v16's leader hints on FENCED_LEADER_EPOCH."""
from __future__ import annotations

import time
import uuid

from kcore.protocol import records as record_codec
from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.integration.test_topic_ids_wire import create, delete, produce_body
from tests.support.wire import WireClient, batch

UNKNOWN = uuid.UUID(int=777)


def fetch(client: WireClient, version: int, topics: list[tuple[uuid.UUID, int, int]],
          session_id: int = 0, session_epoch: int = -1, forgotten: list[tuple[uuid.UUID, int]] = (),
          leader_epoch: int = -1):
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": session_epoch,
            "topics": [{"topic_id": topic_id, "partitions": [
                {"partition": index, "current_leader_epoch": leader_epoch, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}
                for topic_id, index, offset in topics],
            "forgotten_topics_data": [{"topic_id": t, "partitions": [p]} for t, p in forgotten],
            "rack_id": ""}
    return client.request(ApiKey.FETCH, version, body)


def values(data) -> list[bytes]:
    return [r.value for b in record_codec.iter_batches(bytes(data.records or b"")) for r in b.records()]


def produce(client: WireClient, name: str, payloads: list[bytes]) -> None:
    answer = client.request(ApiKey.PRODUCE, 9, produce_body([
        {"name": name, "partition_data": [{"index": 0, "records": bytes(batch(payloads))}]}]))
    assert answer.responses[0].partition_responses[0].error_code == E.NONE


def answers(response) -> dict[tuple[uuid.UUID, int], object]:
    return {(t.topic_id, p.partition_index): p for t in response.responses for p in t.partitions}


def test_v13_to_v18_read_by_id_and_answer_by_id(broker):
    client = WireClient(broker.port)
    try:
        topic_id = create(client, "fetch-ids", partitions=1).topic_id
        produce(client, "fetch-ids", [b"a", b"b"])
        for version in range(13, 19):
            response = fetch(client, version, [(topic_id, 0, 0), (UNKNOWN, 0, 0)])
            found = answers(response)
            assert response.error_code == E.NONE
            assert found[(topic_id, 0)].error_code == E.NONE, version
            assert values(found[(topic_id, 0)]) == [b"a", b"b"]
            assert found[(topic_id, 0)].high_watermark == 2
            assert found[(UNKNOWN, 0)].error_code == E.UNKNOWN_TOPIC_ID
    finally:
        client.close()


def replica_fetch(client: WireClient, version: int, topic_id: uuid.UUID):
    body = {"replica_state": {"replica_id": 99, "replica_epoch": 5}, "max_wait_ms": 0, "min_bytes": 1,
            "max_bytes": 1 << 20, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": topic_id, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    return client.request(ApiKey.FETCH, version, body)


def test_v15_replica_state_and_v16_leader_hints(broker):
    """Broker 99 is read from v15's replica_state: a follower that is no
    replica gets NOT_LEADER_OR_FOLLOWER, and from v16 the partition's
    current leader and its endpoint (KIP-951)."""
    client = WireClient(broker.port)
    try:
        topic_id = create(client, "fetch-replica-state", partitions=1).topic_id
        older = replica_fetch(client, 15, topic_id)
        part = older.responses[0].partitions[0]
        assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
        assert part.current_leader.leader_id == -1 and not older.node_endpoints  # before v16
        for version in (16, 17, 18):
            hinted = replica_fetch(client, version, topic_id)
            part = hinted.responses[0].partitions[0]
            assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
            (node,) = hinted.node_endpoints
            assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (node.node_id, 0)
            assert (node.node_id >= 0, node.port) == (True, broker.port)
    finally:
        client.close()


def test_a_session_by_id_across_delete_and_recreate(broker):
    client = WireClient(broker.port)
    try:
        old_id = create(client, "fetch-session-ids", partitions=1).topic_id
        produce(client, "fetch-session-ids", [b"one"])
        opened = fetch(client, 17, [(old_id, 0, 0), (UNKNOWN, 0, 0)], session_epoch=0)
        session_id = opened.session_id
        assert session_id > 0
        assert answers(opened)[(UNKNOWN, 0)].error_code == E.UNKNOWN_TOPIC_ID
        assert values(answers(opened)[(old_id, 0)]) == [b"one"]
        produce(client, "fetch-session-ids", [b"two"])
        following = fetch(client, 17, [(old_id, 0, 1)], session_id=session_id, session_epoch=1)
        assert values(answers(following)[(old_id, 0)]) == [b"two"]
        # an unknown id in an incremental fetch: answered, not kept
        unknown = fetch(client, 17, [(UNKNOWN, 0, 0)], session_id=session_id, session_epoch=2)
        assert answers(unknown)[(UNKNOWN, 0)].error_code == E.UNKNOWN_TOPIC_ID
        assert [code for code, _ in delete(client, [{"name": None, "topic_id": old_id}]).values()] == [E.NONE]
        new_id = create(client, "fetch-session-ids", partitions=1).topic_id
        assert new_id != old_id
        deadline = time.monotonic() + 10
        while True:
            recreated = fetch(client, 17, [], session_id=session_id, session_epoch=3)
            if answers(recreated).get((old_id, 0)) is not None or time.monotonic() > deadline:
                break
        assert answers(recreated)[(old_id, 0)].error_code == E.INCONSISTENT_TOPIC_ID
        # the old id is forgotten through the session; the session then ends
        forgot = fetch(client, 17, [], session_id=session_id, session_epoch=4, forgotten=[(old_id, 0)])
        assert (forgot.error_code, forgot.session_id, forgot.responses) == (E.NONE, 0, [])
        fresh = fetch(client, 17, [(new_id, 0, 0)])
        assert answers(fresh)[(new_id, 0)].error_code == E.NONE
    finally:
        client.close()

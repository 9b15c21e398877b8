"""ConsumerGroupHeartbeat and ConsumerGroupDescribe over the wire, against
a real broker: Kafka's error codes for stale epochs, unknown members, a
second member with a taken instance id and a full group, each changing
nothing (the same member keeps its epoch and assignment); a heartbeat
frame cut short closes only its connection."""
from __future__ import annotations

import struct

import pytest

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode as E
from tests.support.wire import WireClient, create_topic

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT


def heartbeat(client: WireClient, member_id: str, epoch: int, **fields):
    body = {"group_id": "wg", "member_id": member_id, "member_epoch": epoch, **fields}
    if epoch == 0:
        body.setdefault("rebalance_timeout_ms", 30000)
        body.setdefault("subscribed_topic_names", ["w"])
        body.setdefault("topic_partitions", [])
    return client.request(HB, 1, body)


def describe(client: WireClient):
    return client.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["wg"]}).groups[0]


@pytest.fixture
def group_broker(broker_factory):
    broker = broker_factory({"group.consumer.max.size": "2", "group.initial.rebalance.delay.ms": "0"})
    client = WireClient(broker.port)
    create_topic(client, "w", partitions=4)
    client.close()
    return broker


def test_bad_heartbeats_get_kafkas_errors_and_change_nothing(group_broker):
    client = WireClient(group_broker.port)
    try:
        joined = heartbeat(client, "m1", 0, instance_id="i1")
        assert joined.error_code == E.NONE and joined.member_epoch == 1
        assert sum(len(t.partitions) for t in joined.assignment.topic_partitions) == 4
        before = describe(client)
        cases = [
            (heartbeat(client, "m1", 5, instance_id="i1", topic_partitions=[]), E.FENCED_MEMBER_EPOCH),
            (heartbeat(client, "nobody", 1), E.UNKNOWN_MEMBER_ID),
            (heartbeat(client, "m2", 0, instance_id="i1"), E.UNRELEASED_INSTANCE_ID),
            (heartbeat(client, "m1", 0, rebalance_timeout_ms=-1), E.INVALID_REQUEST),
            (heartbeat(client, "", 0), E.INVALID_REQUEST),
            (heartbeat(client, "m3", 0, server_assignor="nope"), E.UNSUPPORTED_ASSIGNOR),
            (heartbeat(client, "m3", 0, subscribed_topic_names=None, subscribed_topic_regex="(w"),
             E.INVALID_REGULAR_EXPRESSION),
        ]
        for response, code in cases:
            assert response.error_code == code, (response, code)
            assert response.error_message
        assert describe(client) == before
        assert heartbeat(client, "m2", 0).error_code == E.NONE        # the group has room for one more
        assert heartbeat(client, "m3", 0).error_code == E.GROUP_MAX_SIZE_REACHED
        group = describe(client)
        assert sorted(m.member_id for m in group.members) == ["m1", "m2"]
        assert [m.member_type for m in group.members] == [1, 1]
        listed = client.request(ApiKey.LIST_GROUPS, 5, {"types_filter": ["Consumer"]}).groups
        assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [("wg", "consumer", "consumer")]
        classic = client.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["wg"]}).groups[0]
        assert classic.error_code == E.GROUP_ID_NOT_FOUND and "not a classic group" in classic.error_message
    finally:
        client.close()


def test_a_heartbeat_cut_short_closes_only_its_connection(group_broker):
    bad = WireClient(group_broker.port)
    header = struct.pack(">hhih", HB, 1, 7, 4) + b"test" + b"\x00"
    body = b"\x03wg"          # group id, then nothing: the member id is missing
    bad.send_raw(struct.pack(">i", len(header + body)) + header + body)
    assert bad.is_closed_by_peer()
    good = WireClient(group_broker.port)
    try:
        assert heartbeat(good, "m1", 0).error_code == E.NONE
    finally:
        good.close()

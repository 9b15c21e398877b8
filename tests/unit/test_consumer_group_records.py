"""Consumer-group records of __consumer_offsets (KIP-848), byte for byte
from Kafka's group-coordinator specs (ConsumerGroup*Key.json: int16 type
then classic fields; ConsumerGroup*Value.json: int16 version 0 then the
flexible encoding), and their replay."""
from __future__ import annotations

import uuid

import pytest

from kcore.coordinator.group import consumer_records as r
from kcore.coordinator.group.consumer_group import ConsumerGroup
from tests.support.protocol_bytes import NO_TAGS, compact_string, i8, i16, i32, string

TOPIC = uuid.UUID("00112233445566778899aabbccddeeff")


def test_member_key_is_the_type_then_classic_strings():
    key = r.ConsumerGroupKey(r.MEMBER_METADATA, "g", "m1")
    assert r.encode_key(key) == i16(5) + string("g") + string("m1")
    assert r.decode_key(5, r.encode_key(key)) == key


def test_regex_key_names_the_expression():
    key = r.ConsumerGroupKey(r.REGULAR_EXPRESSION, "g", regular_expression="a.*")
    assert r.encode_key(key) == i16(16) + string("g") + string("a.*")


def test_group_value_carries_the_metadata_hash_as_tag_0():
    value = r.value(r.GROUP_METADATA, epoch=5, metadata_hash=77)
    assert r.encode_value(r.GROUP_METADATA, value) == (
        i16(0) + i32(5) + bytes([1]) + bytes([0]) + bytes([8]) + (77).to_bytes(8, "big"))
    without = r.encode_value(r.GROUP_METADATA, r.value(r.GROUP_METADATA, epoch=5))
    assert without == i16(0) + i32(5) + NO_TAGS                       # a default tag is left out


def test_current_assignment_value_bytes():
    value = r.value(r.CURRENT_MEMBER_ASSIGNMENT, member_epoch=3, previous_member_epoch=2, state=1,
                    assigned_partitions=r.topic_partitions({TOPIC: frozenset({1, 0})}),
                    partitions_pending_revocation=[])
    assert r.encode_value(r.CURRENT_MEMBER_ASSIGNMENT, value) == (
        i16(0) + i32(3) + i32(2) + i8(1)
        + bytes([2]) + TOPIC.bytes + bytes([3]) + i32(0) + i32(1) + NO_TAGS     # partitions sorted
        + bytes([1]) + NO_TAGS)


def test_member_value_with_classic_metadata_round_trips():
    classic = r.VALUES[r.MEMBER_METADATA].fields[-1].nested
    protocol = classic.fields[1].nested.data_class(name="range", metadata=b"\x00\x01")
    value = r.value(r.MEMBER_METADATA, instance_id="i", rack_id=None, client_id="c", client_host="/h",
                    subscribed_topic_names=["t"], subscribed_topic_regex=None, rebalance_timeout_ms=300000,
                    server_assignor=None,
                    classic_member_metadata=classic.data_class(session_timeout_ms=45000,
                                                               supported_protocols=[protocol]))
    encoded = r.encode_value(r.MEMBER_METADATA, value)
    assert encoded.startswith(i16(0) + compact_string("i") + b"\x00" + compact_string("c"))
    assert r.decode_value(r.MEMBER_METADATA, encoded) == value


@pytest.mark.parametrize("data", [b"", b"\x00", i16(1) + i32(5), i16(0) + b"\x00"])
def test_unreadable_values_are_record_errors(data):
    with pytest.raises(r.ConsumerRecordError):
        r.decode_value(r.GROUP_METADATA, data)


def test_replay_of_a_deleted_group_and_a_type_4_record():
    group = ConsumerGroup("g")
    group.replay(r.ConsumerGroupKey(r.PARTITION_METADATA, "g"), r.value(r.PARTITION_METADATA, topics=[]))
    group.replay(r.ConsumerGroupKey(r.GROUP_METADATA, "g"), r.value(r.GROUP_METADATA, epoch=4))
    assert (group.group_epoch, group.state.kafka_name) == (4, "Empty")
    group.replay(r.ConsumerGroupKey(r.GROUP_METADATA, "g"), None)
    assert group.state.kafka_name == "Dead"

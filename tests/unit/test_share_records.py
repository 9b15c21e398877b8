"""__share_group_state records in Kafka's layout, bytes spelled out from
share-coordinator/src/main/resources/common/message/ShareSnapshot*.json,
and the simple assignor's rules."""
from __future__ import annotations

import struct
import uuid

from kcore.coordinator.group.records import java_string_hash
from kcore.coordinator.share import records
from kcore.coordinator.share.group import simple_assign
from kcore.coordinator.share.records import ShareKey, ShareState
from kcore.coordinator.share.share_partition import StateBatch

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
KEY = ShareKey("grp", TOPIC_ID, 3)


def test_snapshot_key_is_record_type_then_group_topic_id_partition():
    assert records.encode_key(records.SNAPSHOT, KEY) == (
        struct.pack(">h", 0) + struct.pack(">h", 3) + b"grp" + TOPIC_ID.bytes + struct.pack(">i", 3))
    assert records.decode_key(records.encode_key(records.UPDATE, KEY)) == (records.UPDATE, KEY)


def test_snapshot_value_layout_and_round_trip():
    state = ShareState(1, 2, 3, 40, 5, [StateBatch(40, 41, 2, 1), StateBatch(43, 43, 4, 5)], 1000, 2000)
    data = records.encode_snapshot(state)
    expected = (struct.pack(">h", 0)                      # value version
                + struct.pack(">iiiq", 1, 2, 3, 40)        # snapshot epoch, state epoch, leader epoch, start
                + struct.pack(">qq", 1000, 2000)           # create and write timestamps
                + bytes([3])                                # compact array of 2 batches
                + struct.pack(">qqbh", 40, 41, 2, 1) + b"\0"
                + struct.pack(">qqbh", 43, 43, 4, 5) + b"\0"
                + bytes([1, 0, 4]) + struct.pack(">i", 5))  # tag 0: delivery complete count 5
    assert data == expected
    assert records.decode_value(records.SNAPSHOT, data) == state


def test_updates_apply_over_the_snapshot():
    base = ShareState(0, 1, 1, 10, 0, [StateBatch(10, 14, 0, 1)])
    update = ShareState(1, -1, 2, 12, 1, [StateBatch(13, 13, 2, 1)])
    merged = records.apply_update(base, update)
    assert merged.start_offset == 12 and merged.leader_epoch == 2
    assert merged.state_batches == [StateBatch(12, 12, 0, 1), StateBatch(13, 13, 2, 1),
                                    StateBatch(14, 14, 0, 1)]


def test_the_state_partition_hashes_kafkas_share_partition_key():
    key_text = records.coordinator_key(KEY)
    assert key_text == "grp:ASNFZ4mrze8BI0VniavN7w:3"
    assert records.parse_coordinator_key(key_text) == KEY
    assert records.state_partition_for(KEY, 50) == abs(java_string_hash(key_text)) % 50


def test_simple_assignor_shares_a_partition_only_when_members_outnumber_partitions():
    one = uuid.uuid4()
    four = {f"m{i}": ["t"] for i in range(4)}
    assert simple_assign(four, {"t": (one, 1)}) == {f"m{i}": {one: [0]} for i in range(4)}
    two = simple_assign({"a": ["t"], "b": ["t"]}, {"t": (one, 4)})
    assert two == {"a": {one: [0, 2]}, "b": {one: [1, 3]}}
    assert simple_assign({"a": ["other"]}, {"t": (one, 2)}) == {"a": {}}

"""Per-record produce checks (log/log_validator.py) against Kafka's
``LogValidator`` rules: which records are named, with which error code."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcore._native import records as native_records
from kcore.log.log_validator import (
    MAX_RECORD_ERRORS,
    WALK_WINDOW,
    RecordPolicy,
    RecordValidationError,
    validate_records,
)
from kcore.protocol.constants import INT64_MAX
from kcore.protocol.errors import ErrorCode
from kcore.protocol.records import CompressionType, Record, TimestampType, build_batch
from kcore.testing.batches import encode_record
from tests.support.bombs import bomb_batch

NOW = 1_700_000_000_000
COMPACTED = RecordPolicy(keys_required=True, log_append_time=False,
                         before_max_ms=INT64_MAX, after_max_ms=INT64_MAX)
HOUR_BOUNDS = RecordPolicy(keys_required=False, log_append_time=False,
                           before_max_ms=3_600_000, after_max_ms=60_000)


def check(batch: bytes | bytearray, policy: RecordPolicy) -> RecordValidationError | None:
    header = native_records.validate_batches(batch)[0]
    try:
        validate_records(batch, header, policy, NOW, "t-0")
    except RecordValidationError as exc:
        return exc
    return None


def keyed(count: int, keyless: set[int], codec: int = CompressionType.NONE) -> bytearray:
    return build_batch([Record(timestamp=NOW, key=None if i in keyless else b"k%d" % i, value=b"v")
                        for i in range(count)], codec=codec)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
def test_keyless_records_on_a_compacted_topic_are_each_named(codec):
    keyless = set(range(5, 100, 10))
    error = check(keyed(100, keyless, codec), COMPACTED)
    assert error is not None and error.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in error.record_errors] == sorted(keyless)
    assert all("without a key" in message for _, message in error.record_errors)
    assert error.message.startswith("10 of the batch's 100 records were rejected")


def test_a_fully_keyed_batch_passes_a_compacted_topic():
    assert check(keyed(50, set()), COMPACTED) is None


@given(st.lists(st.integers(-7_200_000, 7_200_000), min_size=1, max_size=20))
def test_timestamps_outside_the_bounds_are_each_named_with_invalid_timestamp(offsets):
    batch = build_batch([Record(timestamp=NOW + offset, key=b"k", value=b"v") for offset in offsets])
    error = check(batch, HOUR_BOUNDS)
    outside = [i for i, offset in enumerate(offsets) if not -3_600_000 <= offset <= 60_000]
    if not outside:
        assert error is None
        return
    assert error is not None and error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [index for index, _ in error.record_errors] == outside


def test_the_key_rule_comes_first_and_a_timestamp_error_sets_the_code():
    policy = RecordPolicy(True, False, 1000, 1000)
    batch = build_batch([Record(timestamp=NOW - 5000, key=None, value=b"v"),
                         Record(timestamp=NOW - 5000, key=b"k", value=b"v"),
                         Record(timestamp=NOW, key=b"k", value=b"v")])
    error = check(batch, policy)
    assert error is not None and error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [(index, "without a key" in message) for index, message in error.record_errors] == \
        [(0, True), (1, False)]


def test_records_without_a_timestamp_are_not_bounded():
    assert check(build_batch([Record(timestamp=-1, key=b"k", value=b"v")], base_timestamp=-1),
                 HOUR_BOUNDS) is None


def test_a_log_append_time_topic_ignores_the_bounds_but_refuses_producer_log_append_time():
    policy = RecordPolicy(False, True, 1000, 1000)
    old = [Record(timestamp=NOW - 10**9, key=b"k", value=b"v")] * 3
    assert check(build_batch(old), policy) is None
    error = check(build_batch(old, timestamp_type=TimestampType.LOG_APPEND_TIME), policy)
    assert error is not None and error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [index for index, _ in error.record_errors] == [0, 1, 2]


def test_difference_max_ms_stands_in_for_bounds_left_at_their_default():
    policy = RecordPolicy.from_configs({"message.timestamp.difference.max.ms": 5000,
                                        "message.timestamp.after.max.ms": 100})
    assert (policy.before_max_ms, policy.after_max_ms) == (5000, 100)
    assert not RecordPolicy.from_configs({}).reads_records
    assert RecordPolicy.from_configs({"cleanup.policy": "compact,delete"}).keys_required


def test_unbounded_policies_do_not_read_records():
    policy = RecordPolicy(False, False, INT64_MAX, INT64_MAX)
    assert check(build_batch([Record(timestamp=-(2**62), key=None, value=b"v")]), policy) is None
    assert policy.timestamp_range(NOW) == (NOW - INT64_MAX, INT64_MAX)


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD])
def test_a_batch_inflating_past_the_limit_is_too_large_and_read_no_further(codec):
    policy = RecordPolicy.from_configs({"cleanup.policy": "compact"})
    assert policy.max_decompressed_size == 64 * 1048588
    error = check(bomb_batch(codec, 200 if codec != CompressionType.GZIP else 256), policy)
    assert error is not None and error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert error.record_errors == [] and "inflate past" in error.message
    # A larger max.message.bytes scales the limit: the 64 MiB bomb fits a 2 MiB topic.
    assert check(bomb_batch(codec, 64), RecordPolicy.from_configs({
        "cleanup.policy": "compact", "max.message.bytes": 2 << 20})) is None


def test_record_errors_name_at_most_max_record_errors_of_a_huge_batch():
    # 200,000 keyless records: every one fails a compacted topic, three windows of the walk.
    count = 200_000
    assert count > 3 * WALK_WINDOW
    section = encode_record(0, 0, None, b"") * count
    batch = build_raw_batch(section, count)
    error = check(batch, COMPACTED)
    assert error is not None and error.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in error.record_errors] == list(range(MAX_RECORD_ERRORS))
    assert error.message.startswith(f"{count} of the batch's {count} records were rejected")


def build_raw_batch(section: bytes, count: int) -> bytearray:
    """An uncompressed batch around an encoded records section."""
    body = struct.pack(">hiqqqhii", 0, count - 1, NOW, NOW, -1, -1, -1, count) + section
    batch = bytearray(struct.pack(">qiib", 0, 9 + len(body), 0, 2))
    batch += struct.pack(">I", native_records.crc32c(body)) + body
    return batch

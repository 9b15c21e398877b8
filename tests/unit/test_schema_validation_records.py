"""Rule 4 of the record rules (log/log_validator.py): with schema
validation on, each record's value (key) must carry a schema id the
registry allows, in Confluent's wire format. The native kernel that reads
the ids (``record_schema_ids``) against its pure-Python twin, and the
refusals naming exactly the records that break the rule."""
from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kcore._native import records as native_records
from kcore._native.batch_layout import BATCH_HEADER_SIZE
from kcore._native.twin import records as twin
from kcore.log.log_validator import RecordPolicy
from kcore.protocol.errors import ErrorCode
from kcore.protocol.records import CompressionType, Record, build_batch
from tests.unit.test_log_validator import NOW, check


def framed(schema_id: int, payload: bytes = b"payload") -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + payload


class Allowed:
    subject = "subject 't-value'"

    def __init__(self, *ids: int):
        self.ids = set(ids)

    def allows(self, schema_id: int) -> bool:
        return schema_id in self.ids


def policy(values: Allowed | None = None, keys: Allowed | None = None) -> RecordPolicy:
    configs = {"confluent.value.schema.validation": values is not None,
               "confluent.key.schema.validation": keys is not None}
    return replace(RecordPolicy.from_configs(configs), value_schemas=values, key_schemas=keys)


payloads = st.one_of(st.none(), st.binary(max_size=12), st.integers(0, 2**31 - 1).map(framed))


@given(st.lists(st.tuples(payloads, payloads), min_size=1, max_size=30), st.booleans(), st.booleans())
# Ids read unsigned, as the validator's _span_schema_id does: read signed,
# 0xFFFFFFFE would be -2, the null marker, and pass validation.
@example(pairs=[(None, b"\x00\x80\x00\x00\x00")], keys=False, distinct=False)
@example(pairs=[(b"\x00\xff\xff\xff\xfe", None)], keys=True, distinct=False)
def test_the_kernel_reads_the_ids_its_twin_reads(pairs, keys, distinct):
    batch = build_batch([Record(key=key, value=value, timestamp=NOW) for key, value in pairs])
    section = memoryview(batch)[BATCH_HEADER_SIZE:]
    found = native_records.record_schema_ids(section, keys, distinct)
    assert found == twin.record_schema_ids(section, keys, distinct)
    if not distinct:
        expected = []
        for key, value in pairs:
            data = key if keys else value
            expected.append(-2 if data is None else struct.unpack(">I", data[1:5])[0]
                            if len(data) >= 5 and data[0] == 0 else -1)
        assert found == expected


def test_the_kernel_refuses_a_malformed_section():
    with pytest.raises(ValueError):
        native_records.record_schema_ids(b"\x7f\x00\x00", False)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_records_without_a_registered_id_are_each_named(codec):
    values = [framed(7)] * 20
    values[3], values[11], values[15] = b"raw", framed(8), b"\x01\x00\x00\x00\x07x"
    error = check(build_batch([Record(value=v, timestamp=NOW) for v in values], codec=codec), policy(Allowed(7)))
    assert error is not None and error.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in error.record_errors] == [3, 11, 15]
    reasons = dict(error.record_errors)
    assert "magic byte 0" in reasons[3] and "schema id 8" in reasons[11] and "'t-value'" in reasons[11]


def test_a_batch_whose_records_all_carry_an_allowed_id_passes():
    batch = build_batch([Record(value=framed(i % 2 + 1), timestamp=NOW) for i in range(100)]
                        + [Record(key=b"k", value=None, timestamp=NOW)])
    assert check(batch, policy(Allowed(1, 2))) is None


def test_keys_are_checked_apart_from_values():
    batch = build_batch([Record(key=framed(5), value=b"free", timestamp=NOW),
                         Record(key=b"raw", value=b"free", timestamp=NOW)])
    error = check(batch, policy(keys=Allowed(5)))
    assert error is not None and [index for index, _ in error.record_errors] == [1]
    assert "key" in error.record_errors[0][1]


def test_validation_without_a_check_refuses_every_id():
    rules = RecordPolicy.from_configs({"redpanda.value.schema.id.validation": True})
    error = check(build_batch([Record(value=framed(1), timestamp=NOW)]), rules)
    assert error is not None and error.record_errors[0][0] == 0


def test_topics_without_validation_read_no_record():
    assert not RecordPolicy.from_configs({}).reads_records
    assert RecordPolicy.from_configs({"confluent.value.schema.validation": True}).reads_records

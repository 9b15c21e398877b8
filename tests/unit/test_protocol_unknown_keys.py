"""A dict with a key that no version of its struct defines is refused by the
encoder (kcore/protocol/encoder.py) under KCORE_STRICT_KEYS=1, which
tests/conftest.py sets: a misspelt key in a handler's answer fails loudly
instead of sending the field's default. Keys of fields that exist only at
other versions of the same struct stay accepted, since handlers fill the
fields of the highest version."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kcore.protocol import (
    ApiKey,
    ProtocolEncodeError,
    RequestHeader,
    encode_body,
    encode_request,
    encode_response,
    encode_struct,
)
from kcore.protocol.encoder import STRICT_KEYS_ENV, strict_keys, struct_encoder
from kcore.protocol.messages.fetch import RESPONSE as FETCH_RESPONSE
from kcore.protocol.messages.fetch import FetchResponse
from kcore.protocol.schema import Field, Struct
from tests.support.protocol_strategies import all_message_versions

CASES = all_message_versions()


def fetch_body(**partition) -> dict:
    return {"responses": [{"topic": "orders", "partitions": [{"partition_index": 0, **partition}]}]}


def test_the_tests_run_with_unknown_keys_refused():
    assert strict_keys()


def test_the_switch_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(STRICT_KEYS_ENV, "0")
    assert not strict_keys()
    monkeypatch.delenv(STRICT_KEYS_ENV)
    assert not strict_keys()


def test_without_the_switch_an_unknown_key_is_ignored_as_before():
    unchecked = struct_encoder(FETCH_RESPONSE, 11, False, check_keys=False)
    checked = struct_encoder(FETCH_RESPONSE, 11, False, check_keys=True)
    plain, misspelt = bytearray(), bytearray()
    unchecked(fetch_body(high_watermark=7), plain, [])
    unchecked(fetch_body(high_watermark=7, high_watermak=8), misspelt, [])
    assert misspelt == plain
    with pytest.raises(ProtocolEncodeError, match="high_watermak"):
        checked(fetch_body(high_watermark=7, high_watermak=8), bytearray(), [])


def test_a_misspelt_key_of_a_nested_struct_is_refused_naming_key_and_struct():
    with pytest.raises(ProtocolEncodeError, match=r"PartitionData: no version defines 'high_watermak'"):
        encode_response(RequestHeader(ApiKey.FETCH, 11, 1, "c"), fetch_body(high_watermak=42))


def test_a_misspelt_top_level_key_is_refused():
    with pytest.raises(ProtocolEncodeError, match=r"ProduceResponse: no version defines 'throttle_time'"):
        encode_response(RequestHeader(ApiKey.PRODUCE, 7, 1, "c"), {"responses": [], "throttle_time": 5})


def test_every_unknown_key_is_named():
    with pytest.raises(ProtocolEncodeError, match=r"'error_cod', 'high_watermak'"):
        encode_body(ApiKey.FETCH, 4, fetch_body(high_watermak=1, error_cod=0))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_every_message_at_every_version_refuses_an_unknown_key(case):
    _, schema, version = case
    with pytest.raises(ProtocolEncodeError, match="no_such_field"):
        encode_struct(schema, version, {"no_such_field": 1})


def test_a_key_of_a_later_version_is_accepted_and_left_out():
    header = RequestHeader(ApiKey.FETCH, 4, 1, "c")
    # preferred_read_replica (v11+) and log_start_offset (v5+) are absent at v4.
    filled = fetch_body(high_watermark=7, preferred_read_replica=2, log_start_offset=3)
    assert encode_body(ApiKey.FETCH, 4, filled) == encode_body(ApiKey.FETCH, 4, fetch_body(high_watermark=7))
    assert encode_response(header, filled)


def test_a_key_of_an_earlier_version_is_accepted_and_left_out():
    # DescribeConfigs is_default exists at v0 only; v1+ carry config_source instead.
    def body(**config) -> dict:
        return {"results": [{"resource_type": 2, "resource_name": "orders", "configs": [
            {"name": "retention.ms", "value": "1", "config_source": 1, **config}]}]}
    assert encode_body(ApiKey.DESCRIBE_CONFIGS, 3, body(is_default=True)) \
        == encode_body(ApiKey.DESCRIBE_CONFIGS, 3, body())
    assert encode_body(ApiKey.DESCRIBE_CONFIGS, 0, body(is_default=True)) \
        != encode_body(ApiKey.DESCRIBE_CONFIGS, 0, body())


def test_requests_and_internal_records_are_checked_too():
    with pytest.raises(ProtocolEncodeError, match="MetadataRequestTopic: no version defines 'nam'"):
        encode_request(ApiKey.METADATA, 8, 1, "c", {"topics": [{"nam": "orders"}]})
    record = Struct("OffsetCommitKey", [Field("group", "string", "0+")])
    assert encode_struct(record, 0, {"group": "g"}) == b"\x00\x01g"
    with pytest.raises(ProtocolEncodeError, match="OffsetCommitKey: no version defines 'grp'"):
        encode_struct(record, 0, {"grp": "g"})


def test_data_objects_and_attribute_objects_encode_as_before():
    partition = FetchResponse.PartitionData(partition_index=0, high_watermark=7)
    objects = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="orders",
                                                                             partitions=[partition])])
    expected = encode_body(ApiKey.FETCH, 11, fetch_body(high_watermark=7))
    assert encode_body(ApiKey.FETCH, 11, objects) == expected
    # Attribute objects are read by name, unchecked: an extra attribute is ignored.
    plain = SimpleNamespace(responses=[SimpleNamespace(topic="orders", partitions=[
        SimpleNamespace(partition_index=0, high_watermark=7, unrelated="x")])])
    assert encode_body(ApiKey.FETCH, 11, plain) == expected

"""Hypothesis strategies for any message schema at any version, and their checks.

``values(schema, version)`` draws a plain dict holding every field of that
version with a valid value; ``normalize`` gives the dict a decoder is
expected to return (defaults filled in, records as bytes). Other protocol
test modules import these (``from tests.support.protocol_strategies import ...``).
"""
from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kcore.protocol import RESPONSES, decode_struct, encode_struct, to_dict
from kcore.protocol.schema import Field
from tests.support.protocol_strategies import all_message_versions, normalize, values


@given(st.data())
def test_drawn_values_encode_and_decode_for_any_message_version(data):
    _name, schema, version = data.draw(st.sampled_from(all_message_versions()))
    value = data.draw(values(schema, version))
    decoded = decode_struct(schema, version, encode_struct(schema, version, value))
    assert to_dict(decoded) == normalize(schema, version, value)


def test_normalize_fills_absent_fields_with_schema_defaults():
    fetch_response = RESPONSES[1]
    partition = normalize(fetch_response, 4, {"responses": [{"topic": "t", "partitions": [{}]}]})
    got = partition["responses"][0]["partitions"][0]
    assert {name: got[name] for name in ("last_stable_offset", "log_start_offset",
                                         "preferred_read_replica", "aborted_transactions")} == {
        "last_stable_offset": -1, "log_start_offset": -1, "preferred_read_replica": -1,
        "aborted_transactions": [],
    }
    assert Field("id", "uuid", "0+").default_value() == uuid.UUID(int=0)

"""The declared schemas agree with Kafka's JSON message specs at every served version.

kafka-python ships Kafka's ``common/message/*.json`` specs; they are read
raw here (kafka-python's own patches are not applied). The ZooKeeper-era
inter-broker specs it does not ship (LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown, AlterPartition) are kept unchanged in
tests/unit/specs/ and read the same way. For each served api and version,
field order, names (snake_case of the JSON names), types, nullability, tags
and defaults must match; version-independent facts (api key,
flexibleVersions) too.
"""
from __future__ import annotations

import pytest

from kcore.protocol import REQUESTS, RESPONSES, SUPPORTED_VERSIONS, ApiKey
from kcore.protocol.schema import MAX_VERSION, parse_versions
from tests.support.protocol_specs import load_spec, schema_view, spec_view, within

CASES = [(f"{schema.name}-v{version}", schema, version)
         for key, (low, high) in SUPPORTED_VERSIONS.items()
         for schema in (REQUESTS[key], RESPONSES[key])
         for version in range(low, high + 1)]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_schema_matches_the_kafka_json_spec_at_this_version(case):
    _id, schema, version = case
    spec = load_spec(schema.name)
    low, high = SUPPORTED_VERSIONS[schema.api_key]
    assert schema_view(schema, version) == spec_view(spec["fields"], version, range(low, high + 1))
    assert schema.is_flexible(version) == within(spec["flexibleVersions"], version)


@pytest.mark.parametrize("key", list(SUPPORTED_VERSIONS), ids=[key.name for key in SUPPORTED_VERSIONS])
def test_each_api_module_declares_its_key_and_kafka_flexible_versions(key):
    for schema, kind in ((REQUESTS[key], "Request"), (RESPONSES[key], "Response")):
        spec = load_spec(schema.name)
        assert schema.name.endswith(kind)
        assert schema.api_key == spec["apiKey"] == key
        assert schema.flexible_versions == parse_versions(spec["flexibleVersions"])


def test_every_served_key_has_schemas_and_nothing_else_does():
    assert set(REQUESTS) == set(RESPONSES) == {int(key) for key in SUPPORTED_VERSIONS}
    assert all(isinstance(key, ApiKey) for key in SUPPORTED_VERSIONS)


def test_versions_strings_parse_like_kafka():
    assert parse_versions("3+") == (3, MAX_VERSION)
    assert parse_versions("0-4") == (0, 4)
    assert parse_versions("2") == (2, 2)
    assert parse_versions("none") is None and parse_versions(None) is None

"""docs/apis.md is written from the ranges a running broker advertises:
the generator's ranges are checked against a real broker's ApiVersions
answer, so the table cannot describe a broker that does not exist."""
from __future__ import annotations

from kcore.cli import api_table
from kcore.protocol.api_keys import ApiKey
from tests.support.wire import WireClient


def test_broker_advertises_exactly_the_generated_table(broker):
    client = WireClient(broker.port)
    try:
        answer = client.request(ApiKey.API_VERSIONS, 3, {})
    finally:
        client.close()
    assert answer.error_code == 0
    advertised = {entry.api_key: (entry.min_version, entry.max_version) for entry in answer.api_keys}
    assert advertised == {int(key): versions for key, versions in api_table.served_versions().items()}

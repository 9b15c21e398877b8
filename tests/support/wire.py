"""Raw-protocol requests for tests (kcore.testing.wire), and a probe of
what a running broker advertises."""
import struct

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.testing.wire import WireClient, batch, create_topic, fetch, fetch_body, produce, produce_body

__all__ = ["WireClient", "batch", "create_topic", "fetch", "fetch_body", "produce", "produce_body",
           "served_api_versions"]


def served_api_versions(port: int) -> dict[int, tuple[int, int]]:
    """What the broker's ApiVersions v0 answer advertises, {api_key: (min,
    max)}, read with struct alone (no kcore schema) so a probe stays true
    whatever the protocol layer serves."""
    client = WireClient(port)
    try:
        client_id = client.client_id.encode()
        body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 1, len(client_id)) + client_id
        client.send_raw(struct.pack(">i", len(body)) + body)
        frame = client.read_frame()
    finally:
        client.close()
    assert frame is not None, "the broker closed the connection on ApiVersions v0"
    _correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    assert error_code == ErrorCode.NONE, error_code
    entries = (struct.unpack_from(">hhh", frame, 10 + 6 * index) for index in range(count))
    return {key: (low, high) for key, low, high in entries}

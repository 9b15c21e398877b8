"""Raw-protocol requests for tests (kcore.testing.wire)."""
from kcore.testing.wire import WireClient, batch, create_topic, fetch, fetch_body, produce, produce_body

__all__ = ["WireClient", "batch", "create_topic", "fetch", "fetch_body", "produce", "produce_body"]

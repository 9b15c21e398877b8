"""Brokers started by tests refuse misspelt answer keys too: they inherit
KCORE_STRICT_KEYS=1 from tests/conftest.py (kcore/protocol/encoder.py)."""
from __future__ import annotations

from pathlib import Path

from kcore.protocol.encoder import STRICT_KEYS_ENV


def test_a_broker_started_by_a_test_runs_with_unknown_keys_refused(broker):
    environment = Path(f"/proc/{broker.process.pid}/environ").read_bytes().split(b"\0")
    assert f"{STRICT_KEYS_ENV}=1".encode() in environment

"""Fixtures of the security tests: a throw-away PKI and one broker with a
listener per security protocol and a SCRAM user (tests/support/secure_broker.py)."""
from __future__ import annotations

import pytest

from tests.support.cli import kcore_cli
from tests.support.secure_broker import SCRAM_PASSWORD, SCRAM_USER, Pki, make_pki, start_secure_broker


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory, pki):
    broker = start_secure_broker(tmp_path_factory.mktemp("secure") / "data", pki)
    added = kcore_cli("users", "add", SCRAM_USER, "--password", SCRAM_PASSWORD,
                      "--bootstrap-server", broker.address("PLAINTEXT"))
    assert added.returncode == 0, added.stderr
    yield broker
    broker.process.kill()

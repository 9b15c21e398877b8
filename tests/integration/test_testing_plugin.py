"""kcore.testing as a user's project meets it: a separate pytest run (pytester,
in a subprocess and a directory of its own, no conftest of ours) whose tests
use the plugin's fixtures and the context managers with confluent-kafka.
The plugin arrives through the pytest11 entry point alone. Every test of
the inner run writes the pids it started, and this test checks that none
outlives the run."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import round_trip as round_trip_module
from tests.support.processes import alive

pytest_plugins = ["pytester"]

# The inner project's support module: the round trip, as a user's own
# would have it, and a note of every process a test started.
HELPERS = Path(round_trip_module.__file__).read_text() + '''

import os


def remember(pid):
    with open(os.environ["KCORE_PIDS"], "a") as pids:
        pids.write(f"{pid}\\n")
'''

BROKER_TESTS = '''
import unittest

from confluent_kafka.admin import AdminClient

import kcore.testing
from helpers import remember, round_trip


def test_broker_fixture(kcore_broker):
    remember(kcore_broker.process.pid)
    assert round_trip(kcore_broker.bootstrap_servers, "t", b"subprocess") == b"subprocess"


def test_factory_applies_overrides(kcore_broker_factory):
    one = kcore_broker_factory()
    two = kcore_broker_factory({"auto.create.topics.enable": "false"})
    remember(one.process.pid)
    remember(two.process.pid)
    assert one.port != two.port and one.data_dir != two.data_dir
    assert round_trip(one.bootstrap_servers, "t", b"one") == b"one"
    # Asking for a topic creates it on the first broker, not on the second.
    for broker, created in ((one, True), (two, False)):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.list_topics("asked", timeout=10)
        assert ("asked" in admin.list_topics(timeout=10).topics) is created


def test_embedded_broker_fixture(kcore_embedded_broker):
    assert round_trip(kcore_embedded_broker.bootstrap_servers, "t", b"embedded") == b"embedded"


class BrokerForUnittest(unittest.TestCase):
    def test_context_manager(self):
        with kcore.testing.broker() as b:
            remember(b.process.pid)
            self.assertEqual(round_trip(b.bootstrap_servers, "t", b"with"), b"with")

    def test_embedded_context_manager(self):
        with kcore.testing.embedded_broker() as b:
            self.assertEqual(round_trip(b.bootstrap_servers, "t", b"in"), b"in")
        self.assertFalse(b.running)
'''

CLUSTER_TESTS = '''
import unittest

import kcore.testing
from helpers import remember, round_trip


def test_cluster_fixture(kcore_cluster, kcore_zookeeper):
    remember(kcore_zookeeper.process.pid)
    for broker in kcore_cluster.brokers.values():
        remember(broker.process.pid)
    kcore_cluster.create_topic("replicated", 1, 3)
    assert round_trip(kcore_cluster.bootstrap_servers, "replicated", b"three") == b"three"
    assert sorted(kcore_cluster.partitions("replicated")[0].isrs) == [1, 2, 3]


class ClusterForUnittest(unittest.TestCase):
    def test_context_manager(self):
        with kcore.testing.cluster(n=3) as c:
            for broker in c.brokers.values():
                remember(broker.process.pid)
            c.create_topic("replicated", 1, 3)
            self.assertEqual(round_trip(c.bootstrap_servers, "replicated", b"with"), b"with")
'''


def run_project(pytester: pytest.Pytester, tests: str, monkeypatch) -> tuple[pytest.RunResult, list[int]]:
    pids = pytester.path / "pids.txt"
    monkeypatch.setenv("KCORE_PIDS", str(pids))
    pytester.makepyfile(helpers=HELPERS, test_project=tests)
    # A fresh interpreter, as `pytest` in the user's project: only the
    # entry point can have loaded the plugin.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", timeout=600)
    started = [int(line) for line in pids.read_text().split()] if pids.exists() else []
    return result, started


def test_fixtures_and_context_managers_serve_confluent_kafka(pytester, monkeypatch):
    result, started = run_project(pytester, BROKER_TESTS, monkeypatch)
    result.assert_outcomes(passed=5)
    assert len(started) == 4
    assert not [pid for pid in started if alive(pid)], "a broker outlived its test"


def test_cluster_fixture_and_context_manager_replicate_to_three_brokers(pytester, monkeypatch):
    result, started = run_project(pytester, CLUSTER_TESTS, monkeypatch)
    result.assert_outcomes(passed=2)
    assert len(started) == 7
    assert not [pid for pid in started if alive(pid)], "a broker or ZooKeeper outlived its test"


def test_plugin_is_listed_with_its_fixtures(pytester):
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider")
    for pattern in ("plugins:*kcore-*", "kcore_broker -- *kcore/testing/plugin.py*",
                    "kcore_broker_factory -- *", "kcore_embedded_broker -- *", "kcore_zookeeper -- *",
                    "kcore_cluster -- *", "kcore_cluster_factory -- *"):
        result.stdout.fnmatch_lines([pattern])  # one at a time: pytest orders fixtures its own way
    disabled = pytester.runpytest_subprocess("--fixtures", "-p", "no:kcore", "-p", "no:cacheprovider")
    assert "kcore_broker" not in disabled.stdout.str()

"""Groups mixing clients: librdkafka, kafka-python and aiokafka members agree
on a protocol every member supports and share the partitions exactly once
(test_groups_harness.py has the scenario and the oracle)."""
from __future__ import annotations

import pytest

from kcore.bench.groups import GROUP_BROKER_SETTINGS, scenario_exactly_once


@pytest.fixture
def broker(broker_factory):
    return broker_factory(GROUP_BROKER_SETTINGS)


def test_confluent_and_kafka_python_members_share_partitions_with_roundrobin(broker, tmp_path):
    scenario_exactly_once(broker, tmp_path, ["confluent", "kafka-python", "confluent"], 30_000,
                          assignors=["roundrobin"] * 3, expected_protocol="roundrobin")


def test_only_protocol_all_members_support_wins_over_the_majority_preference(broker, tmp_path):
    # Two members prefer range, but the aiokafka member only knows roundrobin.
    scenario_exactly_once(broker, tmp_path, ["confluent", "kafka-python", "aiokafka"], 30_000,
                          assignors=["range,roundrobin", "range,roundrobin", "roundrobin"],
                          expected_protocol="roundrobin")

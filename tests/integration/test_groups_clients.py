"""Consumer groups with each real client (confluent-kafka, kafka-python,
aiokafka): three member processes on 12 partitions. The scenarios and their
oracle live in test_groups_harness.py; confluent-kafka, the fastest client,
carries the issue's full 300k-message run."""
from __future__ import annotations

import pytest

from kcore.bench.groups import (
    GROUP_BROKER_SETTINGS,
    SESSION_TIMEOUT_MS,
    scenario_broker_restart,
    scenario_exactly_once,
    scenario_member_killed,
    scenario_static_member_restart,
)

CLIENTS = ["confluent", "kafka-python", "aiokafka"]
MESSAGES = {"confluent": 300_000, "kafka-python": 30_000, "aiokafka": 30_000}


@pytest.fixture
def broker(broker_factory):
    return broker_factory(GROUP_BROKER_SETTINGS)


@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_read_every_message_exactly_once(broker, tmp_path, client):
    scenario_exactly_once(broker, tmp_path, [client] * 3, MESSAGES[client])


@pytest.mark.parametrize("client", CLIENTS)
def test_sigkilled_member_partitions_taken_over_redelivery_only_after_last_commit(broker, tmp_path, client):
    takeover_s = scenario_member_killed(broker, tmp_path, client)
    # The 2 s session timeout ends the victim's membership, not the 300 s
    # rebalance timeout (max.poll.interval.ms): 10 s of slack is far from
    # either, so a loaded machine cannot blur them.
    assert takeover_s < SESSION_TIMEOUT_MS / 1000 + 10


@pytest.mark.parametrize("client", CLIENTS)
def test_static_member_restart_keeps_partitions_without_rebalance(broker, tmp_path, client):
    scenario_static_member_restart(broker, tmp_path, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_resume_from_committed_offsets_after_clean_and_sigkill_broker_restarts(broker, tmp_path, client):
    scenario_broker_restart(broker, tmp_path, client)

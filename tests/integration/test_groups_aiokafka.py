"""Consumer groups with aiokafka: three member processes
on 12 partitions (test_groups_harness.py has the scenarios and the oracle)."""
from __future__ import annotations

import pytest

from tests.integration.test_groups_harness import (GROUP_BROKER_SETTINGS, SESSION_TIMEOUT_MS,
                                                   scenario_broker_restart, scenario_exactly_once,
                                                   scenario_member_killed,
                                                   scenario_static_member_restart)

CLIENT = "aiokafka"


@pytest.fixture
def broker(broker_factory):
    return broker_factory(GROUP_BROKER_SETTINGS)


def test_three_members_read_30k_messages_exactly_once(broker, tmp_path):
    scenario_exactly_once(broker, tmp_path, [CLIENT] * 3, 30_000)


def test_sigkilled_member_partitions_taken_over_redelivery_only_after_last_commit(broker, tmp_path):
    takeover_s = scenario_member_killed(broker, tmp_path, CLIENT)
    assert takeover_s < SESSION_TIMEOUT_MS / 1000 + 3


def test_static_member_restart_keeps_partitions_without_rebalance(broker, tmp_path):
    scenario_static_member_restart(broker, tmp_path, CLIENT)


def test_resume_from_committed_offsets_after_clean_and_sigkill_broker_restarts(broker, tmp_path):
    scenario_broker_restart(broker, tmp_path, CLIENT)

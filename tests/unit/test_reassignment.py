"""The replica-set arithmetic of partition reassignment (KIP-455), checked
against Kafka's ReplicaAssignment cases, and the reassign-partitions files."""
from __future__ import annotations

import json

import pytest

from kcore.cli.reassign import (
    PlanError,
    parse_broker_list,
    parse_log_dirs,
    parse_reassignment,
    parse_topics_file,
    plan_json,
)
from kcore.controller.reassignment import (
    ReplicaAssignment,
    fixed_replicas_answer,
    reassignment_leader,
    validate_target,
)
from kcore.protocol.errors import ErrorCode


def test_a_move_lists_the_target_first_then_the_replicas_leaving():
    moving = ReplicaAssignment((1, 2)).reassign_to([2, 3])
    assert moving == ReplicaAssignment((2, 3, 1), adding=(3,), removing=(1,))
    assert moving.origin == (2, 1) and moving.target == (2, 3)
    assert moving.is_being_reassigned


def test_a_new_target_replaces_a_move_from_the_same_origin():
    moving = ReplicaAssignment((1, 2)).reassign_to([3, 4])
    again = moving.reassign_to([1, 5])
    assert again == ReplicaAssignment((1, 5, 2), adding=(5,), removing=(2,))
    assert again.origin == (1, 2)


def test_cancelling_is_a_move_back_to_the_origin():
    moving = ReplicaAssignment((1, 2)).reassign_to([2, 3])
    cancelled = moving.reassign_to(moving.origin)
    assert not cancelled.is_being_reassigned and set(cancelled.replicas) == {1, 2}


def test_a_move_is_complete_once_the_whole_target_is_in_sync():
    moving = ReplicaAssignment((1,)).reassign_to([1, 2, 3])
    assert not moving.is_complete([1, 2])
    assert moving.is_complete([3, 1, 2])
    assert ReplicaAssignment((1, 2)).is_complete([1])  # nothing moving


@pytest.mark.parametrize("target, why", [
    ([], "empty"), ([2, 2], "repeats"), ([-1, 2], "negative"), ([1, 9], "not alive")])
def test_bad_targets_are_invalid_replica_assignments(target, why):
    code, message = validate_target(ReplicaAssignment((1, 2)), target, live={1, 2, 3})
    assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and why in message


def test_only_the_replicas_being_added_must_be_alive():
    assert validate_target(ReplicaAssignment((1, 2)), [2, 3], live={1, 3}) is None


def test_without_replication_factor_change_the_target_keeps_the_length_it_heads_for():
    still = ReplicaAssignment((1, 2))
    assert validate_target(still, [2, 3], {1, 2, 3}, allow_replication_factor_change=False) is None
    code, message = validate_target(still, [1, 2, 3], {1, 2, 3}, allow_replication_factor_change=False)
    assert code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert message == "The replication factor is changed from 2 to 3"
    growing = ReplicaAssignment((1,)).reassign_to([1, 2, 3])  # RS [1, 2, 3], TRS of three
    assert validate_target(growing, [3, 2, 1], {1, 2, 3}, allow_replication_factor_change=False) is None
    assert validate_target(growing, [2], {1, 2, 3}, allow_replication_factor_change=False)[0] == \
        ErrorCode.INVALID_REPLICATION_FACTOR
    assert validate_target(still, [1, 2, 3], {1, 2, 3}) is None  # allowed by default (v0)


def test_the_leader_after_a_move_is_the_first_live_in_sync_target():
    assert reassignment_leader([3, 2], isr=[1, 2, 3], live={1, 2}) == 2
    assert reassignment_leader([3], isr=[1], live={1, 3}) == -1


def test_replicas_that_never_move_accept_only_themselves():
    assert fixed_replicas_answer([0], [0], [0]) == (ErrorCode.NONE, None)
    assert fixed_replicas_answer([0], None, [0])[0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert fixed_replicas_answer([0], [0, 1], [0])[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    code, message = fixed_replicas_answer([0], [1], [0, 1])
    assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and "zookeeper.connect" in message
    assert fixed_replicas_answer([0], [0, 1], [0, 1], False)[0] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_the_reassignment_file_round_trips_in_kafkas_format():
    text = plan_json({("t", 1): [3, 1], ("t", 0): [1, 2]})
    assert json.loads(text) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [3, 1], "log_dirs": ["any", "any"]}]}
    assert parse_reassignment(text) == {("t", 0): [1, 2], ("t", 1): [3, 1]}


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"version":2,"partitions":[]}', '{"partitions":[]}',
    '{"partitions":[{"topic":"t","partition":0}]}',
    '{"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
    '{"topic":"t","partition":0,"replicas":[2]}]}'])
def test_bad_reassignment_files_are_refused(text):
    with pytest.raises(PlanError):
        parse_reassignment(text)


def test_log_dirs_of_a_reassignment_file_name_each_replicas_dir():
    text = json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d/a", "any"]},
        {"topic": "t", "partition": 1, "replicas": [3]}]})
    assert parse_reassignment(text) == {("t", 0): [1, 2], ("t", 1): [3]}
    assert parse_log_dirs(text) == {("t", 0, 1): "/d/a"}


@pytest.mark.parametrize("log_dirs", [["/d"], ["/d", 5], "/d"])
def test_log_dirs_must_be_one_path_per_replica(log_dirs):
    text = json.dumps({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2],
                                       "log_dirs": log_dirs}]})
    with pytest.raises(PlanError):
        parse_log_dirs(text)


def test_topics_file_and_broker_list():
    assert parse_topics_file('{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}') == ["a", "b"]
    assert parse_broker_list("1, 2,3") == [1, 2, 3]
    with pytest.raises(PlanError):
        parse_broker_list("1,x")
    with pytest.raises(PlanError):
        parse_topics_file('{"topics":[{"name":"a"}]}')

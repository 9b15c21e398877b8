"""Consumer groups: the list, one group's members, committed offsets, end
offsets and lag (with its history), and offset resets.

A reset is ``kcore groups reset-offsets`` done inside the broker: the plan
comes from this broker's logs (log start offset, high watermark, the time
index) and ``execute`` commits it through the group coordinator as an
admin commit (generation -1, no member), which Kafka accepts only while
the group is Empty; the answer comes once the offsets are stored, as
OffsetCommit's does.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kcore.console.base import ApiError, ApiRequest, ConsoleSource, body_object, error_name, int_arg
from kcore.console.messages import local_partition
from kcore.coordinator.group import consumer_protocol
from kcore.coordinator.group.manager import OFFSETS_TOPIC
from kcore.coordinator.group.offsets import sync_error_code
from kcore.coordinator.group.records import OffsetValue
from kcore.coordinator.group.state import GroupState
from kcore.coordinator.internal_log import StoreError
from kcore.log.errors import LogError

log = logging.getLogger(__name__)

MAX_GROUPS_LISTED = 5000
# Partition rows of one group's page (~150 bytes each): a group reading a
# topic of more partitions is shown in part, and says so.
MAX_GROUP_PARTITIONS = 10_000
STRATEGIES = ("earliest", "latest", "offset", "timestamp", "shift")


def list_groups(broker: ConsoleSource, request: ApiRequest) -> dict:
    coordinator = broker.group_coordinator
    groups: list[dict[str, Any]] = []
    for group_id, group in sorted(coordinator.groups.items())[:MAX_GROUPS_LISTED]:
        if group.is_state(GroupState.DEAD):
            continue
        groups.append({"group_id": group_id, "state": group.state.kafka_name, "type": "classic",
                       "protocol_type": group.protocol_type or "", "members": len(group.members),
                       "partitions": len(group.offsets), "lag": broker.consumer_lag.group_lag(group.offsets)})
    for group_id, consumer_group in sorted(coordinator.consumer_groups.items())[:MAX_GROUPS_LISTED]:
        groups.append({"group_id": group_id, "state": consumer_group.state.kafka_name, "type": "consumer",
                       "protocol_type": consumer_group.protocol_type, "members": consumer_group.size,
                       "partitions": len(consumer_group.offsets),
                       "lag": broker.consumer_lag.group_lag(consumer_group.offsets)})
    groups.sort(key=lambda item: str(item["group_id"]))
    total = len(coordinator.groups) + len(coordinator.consumer_groups)
    return {"groups": groups[:MAX_GROUPS_LISTED], "truncated": total > MAX_GROUPS_LISTED}


def _not_here(broker: ConsoleSource, group_id: str, error: int) -> ApiError:
    """The coordinator to ask instead: the leader of the group's
    __consumer_offsets partition, as this broker's metadata says."""
    manager = broker.group_coordinator.manager
    leader = broker.replica_manager.metadata_cache.leader_of(OFFSETS_TOPIC, manager.partition_for(group_id))
    where = f"its coordinator is broker {leader.broker_id} at {leader.host}:{leader.port}" if leader \
        else "its coordinator is not known yet"
    return ApiError(409, error_name(error), f"group {group_id!r} is not coordinated by this broker "
                                            f"({error_name(error)}); {where}")


def _group(broker: ConsoleSource, group_id: str):
    error, _ = broker.group_coordinator.describe_group(group_id)
    if error:
        raise _not_here(broker, group_id, error)
    group = broker.group_coordinator.groups.get(group_id)
    if group is None or group.is_state(GroupState.DEAD):
        raise ApiError(404, "GROUP_ID_NOT_FOUND", f"group {group_id!r} does not exist")
    return group


async def describe_group(broker: ConsoleSource, request: ApiRequest) -> dict:
    group_id = request.params["group"]
    if group_id in broker.group_coordinator.consumer_groups:
        return await _describe_consumer_group(broker, group_id)
    group = _group(broker, group_id)
    stable = group.is_state(GroupState.STABLE)
    owners: dict[tuple[str, int], str] = {}
    members = []
    for member in group.members.values():
        assigned = (consumer_protocol.assigned_partitions(member.assignment)
                    if stable and group.protocol_type == consumer_protocol.PROTOCOL_TYPE else None) or []
        owners.update(dict.fromkeys(assigned, member.member_id))
        members.append({"member_id": member.member_id, "group_instance_id": member.group_instance_id,
                        "client_id": member.client_id, "client_host": member.client_host,
                        "assignment": [list(tp) for tp in sorted(assigned)]})
    offsets, truncated = await _offset_rows(broker, group.offsets, owners)
    return {"group_id": group_id, "state": group.state.kafka_name,
            "protocol_type": group.protocol_type or "", "protocol": group.protocol_name or "",
            "generation_id": group.generation_id, "leader_id": group.leader_id,
            "members": members, "offsets": offsets, "truncated": truncated,
            "lag_history": broker.consumer_lag.lag_history(group_id)}


async def _describe_consumer_group(broker: ConsoleSource, group_id: str) -> dict:
    """A consumer-protocol group (KIP-848): its epoch stands for the
    generation, its assignor for the protocol, and each member's owned
    partitions come from the coordinator (no leader)."""
    described = broker.group_coordinator.consumer_group_describe(group_id)
    if described.error_code:
        raise _not_here(broker, group_id, described.error_code)
    group = broker.group_coordinator.consumer_groups[group_id]
    owners: dict[tuple[str, int], str] = {}
    members = []
    for member in described.members:
        assigned = [(name, p) for _, name, partitions in member.assignment for p in partitions]
        owners.update(dict.fromkeys(assigned, member.member_id))
        members.append({"member_id": member.member_id, "group_instance_id": member.instance_id,
                        "client_id": member.client_id, "client_host": member.client_host,
                        "member_epoch": member.member_epoch,
                        "protocol": "classic" if member.member_type == 0 else "consumer",
                        "assignment": [list(tp) for tp in sorted(assigned)]})
    offsets, truncated = await _offset_rows(broker, group.offsets, owners)
    return {"group_id": group_id, "state": described.group_state, "protocol_type": group.protocol_type,
            "protocol": described.assignor_name, "generation_id": described.group_epoch, "leader_id": None,
            "members": members, "offsets": offsets, "truncated": truncated,
            "lag_history": broker.consumer_lag.lag_history(group_id)}


async def _offset_rows(broker: ConsoleSource, committed_offsets: dict,
                       owners: dict[tuple[str, int], str]) -> tuple[list[dict], bool]:
    offsets = []
    partitions = sorted(set(committed_offsets) | set(owners))
    shown = partitions[:MAX_GROUP_PARTITIONS]
    await broker.consumer_lag.fetch_end_offsets(shown)  # those led elsewhere, from their leaders
    for topic, index in shown:
        committed = committed_offsets.get((topic, index))
        end = broker.consumer_lag.end_offset((topic, index))
        offsets.append({"topic": topic, "partition": index,
                        "committed_offset": committed.offset if committed else None,
                        "end_offset": end,
                        "lag": max(end - committed.offset, 0) if end is not None and committed else None,
                        "member_id": owners.get((topic, index))})
    return offsets, len(partitions) > MAX_GROUP_PARTITIONS


def _target(partition, strategy: str, value: int | None, committed: int | None) -> int:
    log_ = partition.log
    if strategy == "earliest":
        return log_.log_start_offset
    if strategy == "latest":
        return partition.high_watermark
    assert value is not None
    if strategy == "timestamp":
        found = log_.offset_for_timestamp(value)
        return partition.high_watermark if found is None else found[0]
    if strategy == "shift":
        return (partition.high_watermark if committed is None else committed) + value
    return value


def _plan(broker: ConsoleSource, group_id: str, body: dict[str, Any]) -> list[dict]:
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ApiError(400, "INVALID_REQUEST", "topic is required")
    strategy = body.get("strategy")
    if strategy not in STRATEGIES:
        raise ApiError(400, "INVALID_REQUEST", f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    value = int_arg(body, "value")
    if value is None and strategy in ("offset", "timestamp", "shift"):
        raise ApiError(400, "INVALID_REQUEST", f"strategy {strategy} needs a value")
    if broker.controller.topic(topic) is None:
        raise ApiError(404, "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic!r} does not exist")
    indexes = body.get("partitions") or sorted(broker.replica_manager.metadata_cache.partitions(topic))
    if not isinstance(indexes, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
        raise ApiError(400, "INVALID_REQUEST", "partitions must be a list of partition numbers")
    group = broker.group_coordinator.groups.get(group_id)
    plan = []
    for index in indexes:
        partition = local_partition(broker, topic, index)
        if not partition.is_leader:
            raise ApiError(409, "NOT_LEADER_OR_FOLLOWER", f"{topic}-{index} is not led by this broker")
        current = group.offsets.get((topic, index)) if group is not None else None
        committed = current.offset if current is not None else None
        wanted = _target(partition, strategy, value, committed)
        # Like Kafka's tool: a target outside the log is clamped into it.
        new = min(max(wanted, partition.log.log_start_offset), partition.high_watermark)
        plan.append({"topic": topic, "partition": index, "current_offset": committed, "new_offset": new})
    return plan


async def reset_offsets(broker: ConsoleSource, request: ApiRequest) -> dict:
    """``{"topic", "partitions"?, "strategy", "value"?, "execute"?}``: the
    plan, committed when ``execute`` is true (a dry run otherwise)."""
    group_id = request.params["group"]
    body = body_object(request)
    coordinator = broker.group_coordinator
    await coordinator.manager.maybe_create_topic()  # a first group on a fresh broker
    error, summary = coordinator.describe_group(group_id)
    if error:
        raise _not_here(broker, group_id, error)
    plan = _plan(broker, group_id, body)
    state = summary.state
    executable = state in (GroupState.EMPTY.kafka_name, GroupState.DEAD.kafka_name)
    result = {"group_id": group_id, "state": state, "plan": plan, "executed": False}
    if not body.get("execute"):
        return result
    if not executable:
        raise ApiError(409, "NON_EMPTY_GROUP",
                       f"group {group_id!r} is {state} with {len(summary.members)} member(s): offsets can "
                       f"only be reset while it is Empty (stop its consumers first)")
    errors = await _commit(broker, group_id, {(p["topic"], p["partition"]): p["new_offset"] for p in plan})
    failed = {f"{t}-{p}": error_name(code) for (t, p), code in errors.items() if code}
    if failed:
        raise ApiError(409, next(iter(failed.values())), f"offsets not committed: {failed}")
    return {**result, "executed": True}


async def _commit(broker: ConsoleSource, group_id: str, offsets: dict[tuple[str, int], int]
                  ) -> dict[tuple[str, int], int]:
    """An admin OffsetCommit (generation -1, no member), as the handler
    does it: stored in __consumer_offsets, then fsynced when asked."""
    now = int(time.time() * 1000)
    values = {tp: OffsetValue(offset, -1, "", now) for tp, offset in offsets.items()}
    syncs: list = []
    errors = broker.group_coordinator.commit_offsets(group_id, "", None, -1, values, syncs)
    for future, partitions in syncs:
        try:
            await asyncio.shield(future)
        except (LogError, StoreError) as exc:
            log.error("group %s: offset reset not stored: %s", group_id, exc)
            errors.update(dict.fromkeys(partitions, sync_error_code(exc.error_code)))
    return errors


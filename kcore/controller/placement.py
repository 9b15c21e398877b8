"""Replica placement for new partitions.

Without racks, replica j of partition i goes to broker (i + j) mod n of the
live brokers sorted by id (docs/architecture.md#cluster), so leaders
(replica 0) spread round-robin and each broker follows the ones before it.
With ``broker.rack`` set, the brokers are first interleaved by rack (one
broker of each rack in turn, racks and their brokers in id order) and each
partition walks that list from position i, taking a broker from a rack it
does not use yet while such a rack remains: replicas land on distinct racks
first, as in Kafka's rack-aware assignment. Brokers without a rack count as
one rack of their own.
"""
from __future__ import annotations

from collections.abc import Sequence

from kcore.metadata import BrokerInfo, TopicError
from kcore.protocol.errors import ErrorCode


def assign_replicas(num_partitions: int, replication_factor: int,
                    brokers: Sequence[BrokerInfo], first_partition: int = 0) -> dict[int, list[int]]:
    """partition -> replica ids for partitions [first_partition,
    first_partition + num_partitions). Raises TopicError for bad counts."""
    validate_counts(num_partitions, replication_factor, len(brokers))
    ordered = _interleave_by_rack(brokers)
    racks = {broker.broker_id: broker.rack for broker in brokers}
    n = len(ordered)
    assignment = {}
    for partition in range(first_partition, first_partition + num_partitions):
        chosen: list[int] = []
        used_racks: set[str | None] = set()
        all_racks = set(racks.values())
        for step in range(n):
            if len(chosen) == replication_factor:
                break
            candidate = ordered[(partition + step) % n]
            if racks[candidate] in used_racks and used_racks != all_racks:
                continue
            chosen.append(candidate)
            used_racks.add(racks[candidate])
        for step in range(n):  # racks ran out: fill with any broker not chosen yet
            if len(chosen) == replication_factor:
                break
            candidate = ordered[(partition + step) % n]
            if candidate not in chosen:
                chosen.append(candidate)
        assignment[partition] = chosen
    return assignment


def _interleave_by_rack(brokers: Sequence[BrokerInfo]) -> list[int]:
    by_rack: dict[str | None, list[int]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(broker.rack, []).append(broker.broker_id)
    if len(by_rack) <= 1:
        return [b.broker_id for b in sorted(brokers, key=lambda b: b.broker_id)]
    columns = [by_rack[rack] for rack in sorted(by_rack, key=lambda r: (r is None, r or ""))]
    ordered: list[int] = []
    for row in range(max(len(column) for column in columns)):
        ordered.extend(column[row] for column in columns if row < len(column))
    return ordered


def validate_counts(num_partitions: int, replication_factor: int, live_brokers: int) -> None:
    if num_partitions < 1:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0")
    if replication_factor < 1:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         "replication factor must be larger than 0")
    if replication_factor > live_brokers:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"replication factor {replication_factor} is larger than the "
                         f"{live_brokers} available broker{'s' if live_brokers != 1 else ''}")

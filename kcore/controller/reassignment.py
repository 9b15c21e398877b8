"""Partition reassignment (KIP-455) as pure functions of one partition's
replica sets: what a move starts from, where it goes, when it is done.

Kafka's words (``ReplicaAssignment`` of the ZooKeeper-mode controller):

- ORS, the origin replicas: where the partition was before the move;
- TRS, the target replicas: where it is going;
- RS, the full replica set while moving: TRS followed by the ORS members
  not in TRS, so the preferred leader is the target's first replica;
- AR = RS - ORS, the replicas being added; RR = RS - TRS, being removed.

RS, AR and RR are what ``/brokers/topics/<t>`` stores (``partitions``,
``adding_replicas``, ``removing_replicas``), so a new controller resumes
a move where the old one stopped. A move is complete once every TRS
member is in the ISR; a new move of a partition already moving starts
from the same ORS, and cancelling is a move back to the ORS.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kcore.protocol.errors import ErrorCode


@dataclass(frozen=True)
class ReplicaAssignment:
    replicas: tuple[int, ...]                 # RS
    adding: tuple[int, ...] = ()              # AR
    removing: tuple[int, ...] = ()            # RR

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment while moving from this one's origin to ``target``."""
        origin = self.origin
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(full, tuple(r for r in full if r not in origin),
                                 tuple(r for r in full if r not in target))

    def is_complete(self, isr: Collection[int]) -> bool:
        return not self.is_being_reassigned or set(self.target) <= set(isr)


def validate_target(current: ReplicaAssignment, target: Sequence[int],
                    live: Collection[int], allow_replication_factor_change: bool = True
                    ) -> tuple[int, str] | None:
    """Kafka's checks of a requested replica list, as (error code, message);
    None when it may go ahead. Only the replicas being added must be live:
    a dead one already in the set may stay there. Without
    ``allow_replication_factor_change`` (KIP-860) the target must be as
    long as TRS, the set the partition has or is moving to."""
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty"
    if len(set(target)) != len(target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"replica list {list(target)} repeats a broker"
    if any(r < 0 for r in target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"replica list {list(target)} has a negative id"
    dead = [r for r in current.reassign_to(target).adding if r not in live]
    if dead:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"brokers {dead} of replica list {list(target)} are not alive "
                f"(live: {sorted(live)})")
    if not allow_replication_factor_change and len(target) != len(current.target):
        return (ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {len(current.target)} to {len(target)}")
    return None


def reassignment_leader(target: Sequence[int], isr: Collection[int],
                        live: Collection[int]) -> int:
    """The leader once the move completes, when the current one is not in
    TRS: the first TRS member that is live and in sync; -1 if none."""
    for replica in target:
        if replica in live and replica in isr:
            return replica
    return -1


def fixed_replicas_answer(current: Sequence[int], target: Sequence[int] | None,
                          live: Collection[int], allow_replication_factor_change: bool = True
                          ) -> tuple[int, str | None]:
    """The answer of a controller whose replicas never move (a single node,
    the processes of one node): the same replica set is a move already
    done; anything else is refused with Kafka's reason, or with
    INVALID_REPLICA_ASSIGNMENT naming what a move needs."""
    if target is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment is in progress"
    refusal = validate_target(ReplicaAssignment(tuple(current)), target, live,
                              allow_replication_factor_change)
    if refusal is not None:
        return refusal
    if list(target) != list(current):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"replicas {list(current)} cannot move to {list(target)}: moving replicas "
                "needs a ZooKeeper cluster (zookeeper.connect)")
    return ErrorCode.NONE, None

"""Transaction states and their legal transitions, Kafka's table
(kafka.coordinator.transaction.TransactionState; the ids are what
``__transaction_state`` stores)::

    Empty              <- Empty, CompleteCommit, CompleteAbort
    Ongoing            <- Ongoing, Empty, CompleteCommit, CompleteAbort
    PrepareCommit      <- Ongoing
    PrepareAbort       <- Ongoing, PrepareEpochFence
    CompleteCommit     <- PrepareCommit
    CompleteAbort      <- PrepareAbort
    Dead               <- Empty, CompleteCommit, CompleteAbort
    PrepareEpochFence  <- Ongoing

`TransactionMetadata.transition_to` checks every change against it and
raises IllegalStateError otherwise.
"""
from __future__ import annotations

from enum import Enum


class IllegalStateError(Exception):
    """A transaction was asked to enter a state it cannot reach from its current one."""


class TransactionState(Enum):
    # (id stored in __transaction_state, name Kafka's tools print, valid previous states)
    EMPTY = (0, "Empty", ("EMPTY", "COMPLETE_COMMIT", "COMPLETE_ABORT"))
    ONGOING = (1, "Ongoing", ("ONGOING", "EMPTY", "COMPLETE_COMMIT", "COMPLETE_ABORT"))
    PREPARE_COMMIT = (2, "PrepareCommit", ("ONGOING",))
    PREPARE_ABORT = (3, "PrepareAbort", ("ONGOING", "PREPARE_EPOCH_FENCE"))
    COMPLETE_COMMIT = (4, "CompleteCommit", ("PREPARE_COMMIT",))
    COMPLETE_ABORT = (5, "CompleteAbort", ("PREPARE_ABORT",))
    DEAD = (6, "Dead", ("EMPTY", "COMPLETE_COMMIT", "COMPLETE_ABORT"))
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", ("ONGOING",))

    def __init__(self, state_id: int, kafka_name: str, previous_names: tuple[str, ...]):
        self.state_id = state_id
        self.kafka_name = kafka_name
        self._previous_names = previous_names

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state in cls:
            if state.state_id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return frozenset(TransactionState[name] for name in self._previous_names)

    def can_follow(self, previous: TransactionState) -> bool:
        return previous.name in self._previous_names

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def is_preparing(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT,
                        TransactionState.PREPARE_EPOCH_FENCE)

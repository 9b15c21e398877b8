"""The fetcher's side of a fetch session (KIP-227; Kafka's client
``FetchSessionHandler``): which partitions a Fetch request must name.

The first request is full, with epoch 0, asking the broker to open a
session; if the answer carries a session id, later requests are
incremental: they name only the partitions that are new or whose fetch
state (offset, log start, max bytes, leader epoch, last fetched epoch)
changed since the last request, and forget those no longer fetched, with
the epoch the broker expects (1, 2, ...). The broker then answers with
only the partitions that have something new, so every partition missing
from an answer simply had nothing. A session error
(FETCH_SESSION_ID_NOT_FOUND after an eviction or a broker restart,
INVALID_FETCH_SESSION_EPOCH), a lost connection, or an answer without a
session id starts over with a full request.

Not thread-safe: one fetcher task owns it.
"""
from __future__ import annotations

from typing import NamedTuple

from kcore.metadata import TopicPartition
from kcore.protocol.constants import INITIAL_EPOCH, INT32_MAX, INVALID_SESSION_ID
from kcore.protocol.errors import ErrorCode


class FetchState(NamedTuple):
    """What a request says about one partition."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int = -1  # Fetch v12+: -1 asks for no divergence check


class SessionRequest(NamedTuple):
    """The session fields of one Fetch request and the partitions it names."""

    session_id: int
    session_epoch: int
    to_send: dict[TopicPartition, FetchState]
    forgotten: list[TopicPartition]


class FetchSessionHandler:
    """Session state of one fetcher towards one broker."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._sent: dict[TopicPartition, FetchState] = {}

    def build(self, wanted: dict[TopicPartition, FetchState]) -> SessionRequest:
        """The next request for the partitions in ``wanted``."""
        if self.epoch == INITIAL_EPOCH:
            self._sent = dict(wanted)
            return SessionRequest(self.session_id, INITIAL_EPOCH, dict(wanted), [])
        to_send = {key: state for key, state in wanted.items() if self._sent.get(key) != state}
        forgotten = [key for key in self._sent if key not in wanted]
        self._sent = dict(wanted)
        return SessionRequest(self.session_id, self.epoch, to_send, forgotten)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Learn from an answer; False when it was a session error (nothing
        in it is valid, and the next request is full)."""
        if error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                          ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            self.reset()
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id = INVALID_SESSION_ID
            self.reset()  # no session (cache full) or closed: full requests
        elif self.epoch == INITIAL_EPOCH or session_id == self.session_id:
            self.session_id = session_id
            self.epoch = 1 if self.epoch == INITIAL_EPOCH else _next_epoch(self.epoch)
        else:
            self.reset()
        return True

    def reset(self) -> None:
        """Start over with a full request (a new connection, a session
        error). The broker closes an orphaned session when the next full
        request names it."""
        self.epoch = INITIAL_EPOCH
        self._sent = {}


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1

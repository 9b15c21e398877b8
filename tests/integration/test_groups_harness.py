"""The groups harness's own oracle: what check_history accepts and rejects."""
from __future__ import annotations

import pytest

from kcore.bench.groups import History, check_history, even_counts, expected_messages


def _history(*events) -> History:
    history = History()
    history.events = sorted(events)
    return history


def test_oracle_accepts_redelivery_at_or_after_the_committed_offset():
    history = _history((1, "M", "a", 0, 0), (2, "M", "a", 0, 1), (3, "C", "a", 0, 1),
                       (4, "M", "b", 0, 1))
    assert check_history(history, {(0, 0), (0, 1)}, exactly_once=False) == [(0, 1)]


def test_oracle_rejects_redelivery_below_the_committed_offset():
    history = _history((1, "M", "a", 0, 0), (2, "C", "a", 0, 1), (3, "M", "b", 0, 0))
    with pytest.raises(AssertionError, match="below the committed offset"):
        check_history(history, {(0, 0)}, exactly_once=False)


def test_oracle_rejects_duplicates_when_exactly_once_and_gaps_always():
    with pytest.raises(AssertionError, match="processed twice"):
        check_history(_history((1, "M", "a", 0, 0), (2, "M", "b", 0, 0)), {(0, 0)}, exactly_once=True)
    with pytest.raises(AssertionError, match="never consumed"):
        check_history(_history((1, "M", "a", 0, 0)), {(0, 0), (0, 1)}, exactly_once=True)


def test_even_counts_cover_every_message():
    assert sum(even_counts(30_001).values()) == 30_001
    assert len(expected_messages(even_counts(25))) == 25

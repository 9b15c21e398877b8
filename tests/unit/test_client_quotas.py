"""Client quotas: Kafka's entity precedence and the throttle time of the
rate measured in samples."""
from __future__ import annotations

import pytest

from kcore.security.quotas import (
    CLIENT_ID,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotas,
    QuotaEntity,
    QuotaError,
    validate_entity,
    validate_quota,
)

MB = 1024 * 1024


def quotas(*entries: tuple[list, float]) -> ClientQuotas:
    result = ClientQuotas()
    result.replace({QuotaEntity.of(parts): {PRODUCER_BYTE_RATE: value} for parts, value in entries})
    return result


# Kafka's order, most specific first; each level beats every one after it.
LEVELS = [
    [(USER, "alice"), (CLIENT_ID, "app")],
    [(USER, "alice"), (CLIENT_ID, None)],
    [(USER, "alice")],
    [(USER, None), (CLIENT_ID, "app")],
    [(USER, None), (CLIENT_ID, None)],
    [(USER, None)],
    [(CLIENT_ID, "app")],
    [(CLIENT_ID, None)],
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_entity_wins_in_kafkas_order(level):
    configured = quotas(*[(parts, float(index + 1)) for index, parts in enumerate(LEVELS)
                          if index >= level])
    found = configured.quota(PRODUCER_BYTE_RATE, "alice", "app")
    assert found is not None and found[0] == level + 1


def test_no_quota_means_unlimited_and_inactive():
    empty = ClientQuotas()
    empty.replace({})
    assert not empty.active
    assert empty.record(PRODUCER_BYTE_RATE, "alice", "app", 10 * MB) == 0


def test_a_user_quota_does_not_apply_to_other_users():
    configured = quotas(([(USER, "alice")], 1.0))
    assert configured.quota(PRODUCER_BYTE_RATE, "bob", "app") is None


def test_throttle_time_brings_the_rate_back_to_the_quota():
    configured = quotas(([(CLIENT_ID, "app")], float(MB)))
    assert configured.record(PRODUCER_BYTE_RATE, "", "app", MB // 2, now=100.0) == 0
    # 3 MB within the first second: 2 s more are owed before the rate is 1 MB/s
    assert configured.record(PRODUCER_BYTE_RATE, "", "app", 2.5 * MB, now=100.5) == 2000
    assert configured.throttle_ms(PRODUCER_BYTE_RATE, "", "app", now=103.0) == 0


def test_clients_sharing_a_default_quota_have_their_own_rates():
    configured = quotas(([(CLIENT_ID, None)], float(MB)))
    assert configured.record(PRODUCER_BYTE_RATE, "", "a", 3 * MB, now=10.0) > 0
    assert configured.record(PRODUCER_BYTE_RATE, "", "b", MB // 2, now=10.0) == 0


def test_old_samples_expire():
    configured = quotas(([(CLIENT_ID, "app")], float(MB)))
    configured.record(PRODUCER_BYTE_RATE, "", "app", 20 * MB, now=0.0)
    assert configured.throttle_ms(PRODUCER_BYTE_RATE, "", "app", now=1.0) > 0
    assert configured.record(PRODUCER_BYTE_RATE, "", "app", 1, now=30.0) == 0


@pytest.mark.parametrize("parts", [[], [("group", "x")], [(USER, "a"), (USER, "b")],
                                   [(USER, "")]])
def test_malformed_entities_are_refused(parts):
    with pytest.raises(QuotaError):
        validate_entity(parts)


@pytest.mark.parametrize("key,value", [("bogus", 1.0), (PRODUCER_BYTE_RATE, 0.0),
                                       (PRODUCER_BYTE_RATE, -5.0),
                                       (PRODUCER_BYTE_RATE, float("nan"))])
def test_bad_quotas_are_refused(key, value):
    with pytest.raises(QuotaError):
        validate_quota(key, value)

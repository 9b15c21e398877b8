"""Replication throttles (kcore/replication/replication_quota.py) and the
dynamic broker config rules (kcore/dynamic_config.py), against Kafka's
rules: throttled-replica lists name partitions per broker, the measured
rate holds back once above its bound, only dynamic keys may change."""
from __future__ import annotations

import pytest

from kcore.config import BrokerConfig
from kcore.dynamic_config import (
    DEFAULT_ENTITY,
    DynamicBrokerConfig,
    DynamicConfigError,
    apply_change,
    validate,
)
from kcore.protocol.constants import ConfigSource
from kcore.replication.replication_quota import ALL_PARTITIONS, ReplicationQuota, throttled_partitions

LEADER_REPLICAS = "leader.replication.throttled.replicas"


def test_a_throttled_replica_list_names_the_partitions_of_one_broker():
    assert throttled_partitions("0:1,1:2,2:1", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1,1:2", 3) == frozenset()
    assert throttled_partitions(" * ", 7) == ALL_PARTITIONS
    assert throttled_partitions("", 1) == frozenset()


def quota_over(configs: dict[str, dict[str, str]], bound: int) -> ReplicationQuota:
    quota = ReplicationQuota(1, LEADER_REPLICAS, configs.get)
    quota.update_bound(bound)
    return quota


def test_only_listed_partitions_are_throttled_and_only_with_a_rate():
    configs = {"moved": {LEADER_REPLICAS: "0:1,1:2"}, "all": {LEADER_REPLICAS: "*"}}
    unlimited = quota_over(configs, 2**63 - 1)
    assert not unlimited.is_throttled("moved", 0)  # Kafka's default rate: no throttle
    quota = quota_over(configs, 1000)
    assert quota.is_throttled("moved", 0)
    assert not quota.is_throttled("moved", 1)  # listed for broker 2
    assert quota.is_throttled("all", 5)
    assert not quota.is_throttled("unknown", 0)


def test_the_rate_is_exceeded_once_bytes_pass_bound_times_elapsed_seconds():
    quota = quota_over({}, 1000)
    quota.record(900, now=100.0)
    assert not quota.exceeded(now=100.5)  # measured over at least one 1 s sample
    quota.record(200, now=100.6)
    assert quota.exceeded(now=100.7)  # 1100 bytes in 1 s
    assert not quota.exceeded(now=101.2)  # 1100 bytes over 1.2 s
    quota.record(1000, now=101.3)
    assert quota.exceeded(now=101.4)
    assert quota.total_bytes == 2100


def test_a_zero_rate_lets_one_answer_through_then_holds_back():
    quota = quota_over({}, 0)
    assert quota.active and not quota.exceeded(now=5.0)
    quota.record(1, now=5.0)
    assert quota.exceeded(now=9.0)


def test_only_dynamic_keys_with_good_values_may_change():
    validate({"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": None})
    with pytest.raises(DynamicConfigError, match="Cannot update these configs dynamically: log.dirs"):
        validate({"log.dirs": "/tmp/x", "leader.replication.throttled.rate": "1"})
    with pytest.raises(DynamicConfigError, match="must be >= 0"):
        validate({"leader.replication.throttled.rate": "-1"})


def test_own_value_wins_over_the_default_which_wins_over_the_static_one():
    static = BrokerConfig({"broker.id": "4", "follower.replication.throttled.rate": "10"})
    dynamic = DynamicBrokerConfig(static)
    heard = []
    dynamic.listeners.append(lambda: heard.append(1))
    stored: dict[str, dict[str, str]] = {}
    apply_change(stored, DEFAULT_ENTITY, {"follower.replication.throttled.rate": "20"})
    dynamic.replace(stored)
    assert dynamic["follower.replication.throttled.rate"] == 20
    apply_change(stored, "4", {"follower.replication.throttled.rate": "30"})
    dynamic.replace(stored)
    assert dynamic["follower.replication.throttled.rate"] == 30
    assert dynamic.dynamic_synonyms("follower.replication.throttled.rate") == [
        ("30", ConfigSource.DYNAMIC_BROKER_CONFIG), ("20", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    dynamic.replace(stored)  # unchanged: no one is told
    assert heard == [1, 1]
    apply_change(stored, "4", {"follower.replication.throttled.rate": None})
    apply_change(stored, DEFAULT_ENTITY, {"follower.replication.throttled.rate": None})
    assert stored == {}
    dynamic.replace(stored)
    assert dynamic["follower.replication.throttled.rate"] == 10


def test_a_dynamic_topic_default_wins_over_the_static_synonyms_it_stands_for():
    dynamic = DynamicBrokerConfig(BrokerConfig({"log.retention.hours": "1", "message.max.bytes": "3000"}))
    assert dynamic.topic_defaults()["retention.ms"] == 3_600_000
    dynamic.replace({DEFAULT_ENTITY: {"log.retention.ms": "5000", "message.max.bytes": "2000"}})
    defaults = dynamic.topic_defaults()
    assert (defaults["retention.ms"], defaults["max.message.bytes"]) == (5000, 2000)
    assert dynamic.static.topic_defaults()["retention.ms"] == 3_600_000  # the static view is kept


def test_a_key_kcore_does_not_define_is_stored_as_written():
    validate({"acme.plugin.mode": "any text", "leader.replication.throttled.rate": "1"})
    dynamic = DynamicBrokerConfig(BrokerConfig({"broker.id": "3"}))
    dynamic.replace({"3": {"acme.plugin.mode": "x", "log.dirs": "/ignored"}, "<default>": {"acme.other": "y"}})
    assert dynamic.custom("3") == {"acme.plugin.mode": "x"}
    assert dynamic.custom("<default>") == {"acme.other": "y"}

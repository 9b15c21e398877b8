"""The durability policy from Kafka's settings: broker log.flush.interval.*
reach every topic as flush.*, a topic may override them, page-cache mode
flushes on flush.messages / flush.ms only, and flush.messages=1 is the
fsync-before-ack mode."""
from __future__ import annotations

import pytest

from kcore.config import BrokerConfig, ConfigError, parse_topic_configs
from kcore.log.log import Log
from kcore.log.manager import LogManager
from kcore.protocol.constants import INT64_MAX
from kcore.replication.partition import Partition
from tests.support.batches import make_batch
from tests.support.clock import HOUR_S, ManualClock


def test_broker_flush_settings_become_topic_defaults():
    defaults = BrokerConfig({}).topic_defaults()
    assert (defaults["flush.messages"], defaults["flush.ms"]) == (INT64_MAX, INT64_MAX)
    configured = BrokerConfig({"log.flush.interval.messages": "1",
                               "log.flush.interval.ms": "250"}).topic_defaults()
    assert (configured["flush.messages"], configured["flush.ms"]) == (1, 250)
    scheduler = BrokerConfig({"log.flush.scheduler.interval.ms": "3000"}).topic_defaults()
    assert scheduler["flush.ms"] == 3000


def test_topic_flush_messages_one_makes_one_partition_durable(tmp_path):
    defaults = BrokerConfig({}).topic_defaults()
    synced = Partition("a", 0, Log.open(tmp_path / "a-0"),
                       {**defaults, **parse_topic_configs({"flush.messages": "1"})}, broker_id=0)
    cached = Partition("b", 0, Log.open(tmp_path / "b-0"), defaults, broker_id=0)
    assert synced.durable and not cached.durable
    synced.close()
    cached.close()


def test_page_cache_mode_flushes_every_flush_messages_messages(tmp_path):
    manager = LogManager([tmp_path], {"flush.messages": 3})
    log = manager.get_or_create_log("t", 0)
    log.append(make_batch(2), 0)
    assert log.recovery_point == 0
    log.append(make_batch(1), 0)
    assert log.recovery_point == 3
    manager.shutdown()


def test_page_cache_mode_flushes_on_flush_ms_from_the_background_task(tmp_path):
    manager = LogManager([tmp_path], BrokerConfig({"log.flush.interval.ms": "0"}).topic_defaults())
    eager = manager.get_or_create_log("eager", 0)
    lazy = manager.get_or_create_log("lazy", 0, {"flush.ms": INT64_MAX})
    for item in (eager, lazy):
        item.append(make_batch(4), 0)
    manager.flush_dirty_logs()
    assert (eager.recovery_point, lazy.recovery_point) == (4, 0)
    manager.shutdown()


@pytest.mark.parametrize("wall_step_s", [HOUR_S, -HOUR_S], ids=["forward-1h", "back-1h"])
def test_flush_ms_counts_monotonic_time_not_wall_clock_steps(tmp_path, wall_step_s):
    """A wall clock stepped back an hour does not hold flushes back for an
    hour, nor does one stepped forward make them due at once."""
    manager = LogManager([tmp_path], BrokerConfig({"log.flush.interval.ms": "1000"}).topic_defaults())
    log = manager.get_or_create_log("t", 0)
    log.clock = clock = ManualClock()
    log.flush()  # flushed now, on this clock
    log.append(make_batch(4), 0)
    clock.step(wall_step_s)
    manager.flush_dirty_logs()
    assert log.recovery_point == 0
    clock.advance(1.0)
    manager.flush_dirty_logs()
    assert log.recovery_point == 4
    manager.shutdown()


def test_journal_size_is_64_mib_by_default_0_turns_it_off_and_tiny_sizes_are_refused():
    assert BrokerConfig({})["log.flush.journal.bytes"] == 64 << 20
    assert BrokerConfig({"log.flush.journal.bytes": "0"})["log.flush.journal.bytes"] == 0
    with pytest.raises(ConfigError, match="log.flush.journal.bytes"):
        BrokerConfig({"log.flush.journal.bytes": "4096"})

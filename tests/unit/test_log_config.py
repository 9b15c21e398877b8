"""LogConfig from Kafka topic keys, and the checkpoint files."""
from __future__ import annotations

import pytest

from kcore.log.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile
from kcore.log.config import LogConfig
from kcore.log.errors import KafkaStorageError


def test_defaults_are_kafkas():
    config = LogConfig()
    assert (config.segment_bytes, config.segment_ms, config.segment_index_bytes) == (
        1 << 30, 604_800_000, 10 << 20)
    assert (config.index_interval_bytes, config.retention_ms, config.retention_bytes) == (
        4096, 604_800_000, -1)
    assert (config.max_message_bytes, config.cleanup_policy, config.file_delete_delay_ms) == (
        1048588, "delete", 60000)
    assert (config.message_timestamp_type, config.compression_type, config.min_insync_replicas) == (
        "CreateTime", "producer", 1)


def test_from_topic_configs_applies_kafka_keys_over_defaults():
    defaults = {"segment.bytes": 1000, "retention.ms": "5000", "preallocate": "true",
                "cleanup.policy": ["compact", "delete"], "not.a.log.key": 1}
    config = LogConfig.from_topic_configs({"retention.ms": 7, "flush.ms": None}, defaults)
    assert (config.segment_bytes, config.retention_ms, config.preallocate) == (1000, 7, True)
    assert config.cleanup_policy == "compact,delete" and config.compact and config.delete
    assert config.flush_ms == LogConfig().flush_ms
    assert LogConfig.from_topic_configs({"segment.ms": "10"}, config).segment_bytes == 1000


def test_to_topic_configs_round_trips():
    config = LogConfig(segment_bytes=123, min_cleanable_dirty_ratio=0.25)
    assert LogConfig.from_topic_configs(config.to_topic_configs()) == config
    assert config.to_topic_configs()["segment.bytes"] == 123


def test_bad_boolean_is_rejected():
    with pytest.raises(ValueError):
        LogConfig.from_topic_configs({"preallocate": "maybe"})


def test_offset_checkpoint_round_trips_in_kafkas_text_format(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(path).write({("orders", 1): 99, ("my-topic", 0): 1234})
    assert path.read_text() == "0\n2\nmy-topic 0 1234\norders 1 99\n"
    assert OffsetCheckpointFile(path).read() == {("orders", 1): 99, ("my-topic", 0): 1234}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_missing_checkpoint_reads_empty_and_malformed_raises(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "nothing").read() == {}
    bad = tmp_path / "bad"
    bad.write_text("0\n2\nt 0 1\n")
    with pytest.raises(KafkaStorageError):
        OffsetCheckpointFile(bad).read()
    bad.write_text("1\n0\n")
    with pytest.raises(KafkaStorageError):
        OffsetCheckpointFile(bad).read()


def test_leader_epoch_checkpoint_round_trips(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write([(0, 0), (3, 120)])
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert LeaderEpochCheckpointFile(path).read() == [(0, 0), (3, 120)]

"""Topic ids (KIP-516) below the protocol: Kafka's ``partition.metadata``
file, a log's id across restarts, stray logs of deleted topics set aside
by the replica manager, the metadata cache's name <-> id maps, and the ids
the single-node controller gives topics (new ones, and ones from before
ids existed)."""
from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from kcore.controller.local import LocalController
from kcore.controller.zk_paths import decode_assignment, encode_assignment
from kcore.log.checkpoints import PARTITION_METADATA_FILE, PartitionMetadataFile
from kcore.log.errors import KafkaStorageError
from kcore.log.manager import LogManager
from kcore.metadata import (
    NO_TOPIC_ID,
    BrokerInfo,
    PartitionState,
    topic_id_from_string,
    topic_id_to_string,
)
from kcore.metadata_store.node_file import METADATA_FILE
from kcore.replication.metadata_cache import MetadataCache
from kcore.replication.replica_manager import ReplicaManager
from tests.support.batches import build_batch
from tests.support.in_process import TOPIC_DEFAULTS

OLD_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
NEW_ID = uuid.UUID("99999999-8888-7777-6666-555555555555")
ME = BrokerInfo(1, "127.0.0.1", 9092)


def test_topic_id_strings_are_kafkas_base64_and_bad_ones_are_refused():
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    assert topic_id_to_string(topic_id) == "AAECAwQFBgcICQoLDA0ODw"
    assert topic_id_from_string("AAECAwQFBgcICQoLDA0ODw") == topic_id
    for bad in ("", "AAECAwQFBgcICQoLDA0OD", "AAECAwQFBgcICQoLDA0O!w", "A" * 24):
        with pytest.raises(ValueError):
            topic_id_from_string(bad)


def test_partition_metadata_is_kafkas_two_line_text(tmp_path):
    metadata = PartitionMetadataFile(tmp_path)
    assert metadata.read() is None
    metadata.write(OLD_ID)
    assert (tmp_path / PARTITION_METADATA_FILE).read_text() == (
        f"version: 0\ntopic_id: {topic_id_to_string(OLD_ID)}\n")
    assert metadata.read() == OLD_ID
    # Kafka's reader takes the same lines in any order, spaces trimmed.
    (tmp_path / PARTITION_METADATA_FILE).write_text(f"topic_id:{topic_id_to_string(NEW_ID)}\nversion: 0\n")
    assert metadata.read() == NEW_ID


@pytest.mark.parametrize("text", ["version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n",
                                  "version: 0\ntopic_id: not-an-id\n", "", "\xff garbage"])
def test_a_partition_metadata_file_not_in_kafkas_format_is_refused(tmp_path, text):
    (tmp_path / PARTITION_METADATA_FILE).write_text(text, errors="surrogateescape")
    with pytest.raises(KafkaStorageError):
        PartitionMetadataFile(tmp_path).read()


def test_a_log_keeps_its_topic_id_across_restarts_and_refuses_another(tmp_path):
    logs = LogManager([tmp_path], TOPIC_DEFAULTS)
    log = logs.get_or_create_log("t", 0)
    assert log.topic_id is None
    log.assign_topic_id(OLD_ID)
    log.assign_topic_id(OLD_ID)  # the same id again: nothing to do
    with pytest.raises(ValueError):
        log.assign_topic_id(NEW_ID)
    log.append(build_batch([b"v"]), leader_epoch=0)
    log.flush()
    logs.shutdown()
    reopened = LogManager([tmp_path], TOPIC_DEFAULTS)
    assert reopened.get_log("t", 0).topic_id == OLD_ID
    reopened.shutdown()


def test_an_unreadable_partition_metadata_leaves_the_log_without_an_id(tmp_path):
    logs = LogManager([tmp_path], TOPIC_DEFAULTS)
    logs.get_or_create_log("t", 0).assign_topic_id(OLD_ID)
    logs.shutdown()
    (tmp_path / "t-0" / PARTITION_METADATA_FILE).write_text("version: 7\n")
    reopened = LogManager([tmp_path], TOPIC_DEFAULTS)
    assert reopened.get_log("t", 0).topic_id is None
    reopened.shutdown()


def state(topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int = 0) -> PartitionState:
    return PartitionState(topic, partition, 1, leader_epoch, (1,), (1,), 0, 1, topic_id)


def replica_manager(directory: Path) -> tuple[LogManager, ReplicaManager]:
    logs = LogManager([directory], TOPIC_DEFAULTS)
    return logs, ReplicaManager(1, logs, TOPIC_DEFAULTS, 86_400_000)


def strays(directory: Path) -> list[str]:
    return sorted(path.name.split(".")[0] for path in directory.glob("*-stray"))


def test_a_log_of_the_deleted_topic_is_set_aside_and_the_new_topic_starts_empty(tmp_path):
    logs, replicas = replica_manager(tmp_path)
    replicas.on_leader_and_isr(1, 1, [state("t", 0, OLD_ID, leader_epoch=7)], [ME])
    replicas.get("t", 0).log.append(build_batch([b"old"] * 3), leader_epoch=7)
    # Re-created under the same name (a StopReplica this broker missed):
    # a lower leader epoch, yet the new topic's state is applied.
    errors = replicas.on_leader_and_isr(1, 1, [state("t", 0, NEW_ID, leader_epoch=0)], [ME])
    assert errors == {("t", 0): 0}
    partition = replicas.get("t", 0)
    assert (partition.log.topic_id, partition.log_end_offset, partition.leader_epoch) == (NEW_ID, 0, 0)
    assert strays(tmp_path) == ["t-0"]
    stray = next(tmp_path.glob("*-stray"))
    assert PartitionMetadataFile(stray).read() == OLD_ID  # kept whole for an operator
    replicas.shutdown()
    logs.shutdown()
    # A restart does not serve the stray: it only warns about it.
    reopened = LogManager([tmp_path], TOPIC_DEFAULTS)
    assert list(reopened.logs) == [("t", 0)] and reopened.get_log("t", 0).topic_id == NEW_ID
    reopened.shutdown()


def test_a_full_leader_and_isr_sets_aside_every_log_it_does_not_name_under_its_id(tmp_path):
    logs, replicas = replica_manager(tmp_path)
    replicas.on_leader_and_isr(1, 1, [state("kept", 0, OLD_ID), state("gone", 0, OLD_ID),
                                      state("recreated", 0, OLD_ID)], [ME])
    replicas.shutdown()
    logs.shutdown()
    logs, replicas = replica_manager(tmp_path)  # restarted: the controller's first request is FULL
    replicas.on_leader_and_isr(1, 2, [state("kept", 0, OLD_ID), state("recreated", 0, NEW_ID)],
                               [ME], full=True)
    assert sorted(logs.logs) == [("kept", 0), ("recreated", 0)]
    assert logs.get_log("recreated", 0).topic_id == NEW_ID
    assert strays(tmp_path) == ["gone-0", "recreated-0"]
    # An incremental request leaves logs it does not name alone.
    replicas.on_leader_and_isr(1, 2, [state("other", 0, NEW_ID)], [ME])
    assert sorted(logs.logs) == [("kept", 0), ("other", 0), ("recreated", 0)]
    replicas.shutdown()
    logs.shutdown()


def test_a_log_from_before_topic_ids_takes_its_topics_id(tmp_path):
    logs, replicas = replica_manager(tmp_path)
    replicas.on_leader_and_isr(1, 1, [state("t", 0, NO_TOPIC_ID)], [ME])
    replicas.get("t", 0).log.append(build_batch([b"kept"]), leader_epoch=0)
    assert not (tmp_path / "t-0" / PARTITION_METADATA_FILE).exists()
    replicas.on_leader_and_isr(1, 2, [state("t", 0, OLD_ID, leader_epoch=1)], [ME], full=True)
    partition = replicas.get("t", 0)
    assert (partition.log.topic_id, partition.log_end_offset) == (OLD_ID, 1)
    assert PartitionMetadataFile(tmp_path / "t-0").read() == OLD_ID
    assert strays(tmp_path) == []
    replicas.shutdown()
    logs.shutdown()


def test_the_metadata_cache_maps_names_and_ids_and_forgets_a_recreated_topics_partitions():
    cache = MetadataCache()
    cache.update(1, [ME], [state("t", p, OLD_ID) for p in range(3)])
    assert (cache.topic_id("t"), cache.topic_name(OLD_ID)) == (OLD_ID, "t")
    assert (cache.topic_id("nope"), cache.topic_name(NEW_ID)) == (NO_TOPIC_ID, None)
    cache.update(1, [ME], [state("t", 0, NEW_ID)])  # the deletion was never seen here
    assert sorted(cache.partitions("t")) == [0]
    assert (cache.topic_id("t"), cache.topic_name(NEW_ID), cache.topic_name(OLD_ID)) == (NEW_ID, "t", None)
    cache.update(1, [ME], [], deleted=["t"])
    assert (cache.contains("t"), cache.topic_id("t"), cache.topic_name(NEW_ID)) == (False, NO_TOPIC_ID, None)


def test_the_assignment_znode_carries_the_id_as_kafka_writes_it_and_may_lack_one():
    data = encode_assignment({0: [1, 2]}, OLD_ID)
    assert json.loads(data)["topic_id"] == topic_id_to_string(OLD_ID)
    assert decode_assignment(data) == ({0: [1, 2]}, OLD_ID)
    assert decode_assignment(b'{"version":1,"partitions":{"0":[1]}}') == ({0: [1]}, NO_TOPIC_ID)
    assert "topic_id" not in json.loads(encode_assignment({0: [1]}, NO_TOPIC_ID))
    with pytest.raises(ValueError):
        decode_assignment(b'{"version":3,"topic_id":"nope","partitions":{}}')


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_recreated_topic_gets_a_new_id_and_ids_survive_restarts(tmp_path):
    controller = LocalController(tmp_path, ME)
    run(controller.start())
    first = run(controller.create_topic("t", 1, 1, {})).topic_id
    run(controller.delete_topic("t"))
    second = run(controller.create_topic("t", 1, 1, {})).topic_id
    assert NO_TOPIC_ID not in (first, second) and first != second
    assert controller.topic_by_id(second).name == "t" and controller.topic_by_id(first) is None
    restarted = LocalController(tmp_path, ME)
    assert restarted.topic("t").topic_id == second


def test_a_topic_from_before_ids_gets_one_once(tmp_path):
    controller = LocalController(tmp_path, ME)
    run(controller.start())
    run(controller.create_topic("legacy", 2, 1, {}))
    path = tmp_path / METADATA_FILE
    data = json.loads(path.read_text())
    del data["topics"][0]["topic_id"]
    path.write_text(json.dumps(data))
    controller = LocalController(tmp_path, ME)
    run(controller.start())
    given = controller.topic("legacy").topic_id
    assert given != NO_TOPIC_ID
    assert {s.topic_id for s in controller.partition_states("legacy")} == {given}
    assert LocalController(tmp_path, ME).topic("legacy").topic_id == given

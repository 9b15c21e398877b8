"""The single-node controller: persistence, Kafka's error codes, and the
LeaderAndIsr / UpdateMetadata / StopReplica events it sends its broker."""
import asyncio

import pytest

from kcore.controller.base import StopReplicaPartition
from kcore.controller.local import LocalController
from kcore.metadata import BrokerInfo, TopicError
from kcore.metadata_store.base import BLOCK_SIZE
from kcore.metadata_store.file import FileProducerIdManager


class Recorder:
    """ControllerEvents that keep what they were told."""

    def __init__(self):
        self.leader_and_isr, self.update_metadata, self.stop_replica, self.configs = [], [], [], []

    def on_leader_and_isr(self, controller_id, controller_epoch, states, leaders, full=False):
        self.leader_and_isr.append((controller_epoch, list(states), list(leaders)))
        self.full = full
        return {}

    def on_update_metadata(self, controller_id, controller_epoch, brokers, states, deleted=()):
        self.update_metadata.append((controller_id, list(brokers), list(states), list(deleted)))
        return 0

    def on_stop_replica(self, controller_epoch, partitions):
        self.stop_replica.append(list(partitions))
        return {}

    def on_topic_config_change(self, topic):
        self.configs.append(topic)


def run(coroutine):
    return asyncio.run(coroutine)


def test_topics_survive_reload(tmp_path):
    async def main():
        controller = LocalController(tmp_path, 0)
        info = await controller.create_topic("orders", 3, 1, {"retention.ms": "1000"})
        await controller.create_partitions("orders", 5)
        reloaded = LocalController(tmp_path, 0)
        assert reloaded.topic("orders").num_partitions == 5
        assert reloaded.topic("orders").topic_id == info.topic_id
        assert reloaded.topic("orders").configs == {"retention.ms": "1000"}
        assert reloaded.cluster_id == controller.cluster_id and len(controller.cluster_id) == 22
    run(main())


@pytest.mark.parametrize("name,code", [("", 17), ("a" * 250, 17), ("bad/name", 17), ("..", 17)])
def test_illegal_topic_names(tmp_path, name, code):
    with pytest.raises(TopicError) as info:
        run(LocalController(tmp_path, 0).create_topic(name, 1, 1, {}))
    assert info.value.error_code == code


def test_duplicate_topic_and_bad_counts(tmp_path):
    controller = LocalController(tmp_path, 0)
    run(controller.create_topic("t", 1, 1, {}))
    errors = []
    for call in (lambda: controller.create_topic("t", 1, 1, {}),
                 lambda: controller.create_topic("u", 0, 1, {}),
                 lambda: controller.create_topic("v", 1, 3, {}),
                 lambda: controller.create_topic("w", -1, 1, {}, {0: [0], 1: [7]}),
                 lambda: controller.create_partitions("t", 1),
                 lambda: controller.delete_topic("nope")):
        with pytest.raises(TopicError) as info:
            run(call())
        errors.append(info.value.error_code)
    assert errors == [36, 37, 38, 39, 37, 3]


def test_internal_topics_get_one_replica_on_a_single_node(tmp_path):
    info = run(LocalController(tmp_path, 0).create_topic("__consumer_offsets", 4, 3, {}))
    assert info.replication_factor == 1 and info.assignment == {i: [0] for i in range(4)}


def test_each_start_is_a_new_controller_and_leader_epoch(tmp_path):
    me = BrokerInfo(5, "127.0.0.1", 9999, rack="r1")

    async def main():
        events = Recorder()
        first = LocalController(tmp_path, me, events)
        await first.start()
        await first.create_topic("t", 2, 1, {})
        epoch, states, leaders = events.leader_and_isr[-1]
        assert [(s.partition, s.leader, s.leader_epoch, s.isr, s.replicas) for s in states] == \
            [(0, 5, 0, (5,), (5,)), (1, 5, 0, (5,), (5,))]
        assert leaders == [me] and events.update_metadata[-1][:2] == (5, [me])
        events = Recorder()
        second = LocalController(tmp_path, me, events)
        await second.start()
        later_epoch, states, _ = events.leader_and_isr[-1]
        assert later_epoch == epoch + 1
        assert [s.leader_epoch for s in states] == [1, 1]
    run(main())


def test_delete_stops_and_deletes_every_replica_and_drops_the_topic(tmp_path):
    async def main():
        events = Recorder()
        controller = LocalController(tmp_path, 0, events)
        await controller.start()
        await controller.create_topic("t", 2, 1, {})
        await controller.delete_topic("t")
        assert events.stop_replica[-1] == [StopReplicaPartition("t", 0, 0, True),
                                           StopReplicaPartition("t", 1, 0, True)]
        assert events.update_metadata[-1][3] == ["t"]
        assert controller.topic("t") is None
    run(main())


def test_config_changes_reach_the_broker(tmp_path):
    async def main():
        events = Recorder()
        controller = LocalController(tmp_path, 0, events)
        await controller.create_topic("t", 1, 1, {})
        await controller.set_topic_configs("t", {"retention.ms": "5"})
        assert events.configs == ["t"] and controller.topic("t").configs == {"retention.ms": "5"}
    run(main())


def test_data_dir_of_another_broker_is_refused(tmp_path):
    LocalController(tmp_path, broker=1)
    with pytest.raises(ValueError, match="broker.id=1"):
        LocalController(tmp_path, broker=2)


def test_producer_ids_never_repeat_across_restarts(tmp_path):
    first = FileProducerIdManager(tmp_path)
    ids = [run(first.next_id()) for _ in range(3)]
    second = FileProducerIdManager(tmp_path)
    later = run(second.next_id())
    assert ids == [0, 1, 2]
    assert later == BLOCK_SIZE  # the rest of the first block is skipped, never reused

import pytest

from kcore.controller.local import LocalController, TopicError
from kcore.controller.producer_ids import BLOCK_SIZE, ProducerIdManager


def test_topics_survive_reload(tmp_path):
    controller = LocalController(tmp_path, broker_id=0)
    info = controller.create_topic("orders", 3, 1, {"retention.ms": "1000"})
    controller.create_partitions("orders", 5)
    reloaded = LocalController(tmp_path, broker_id=0)
    assert reloaded.topic("orders").num_partitions == 5
    assert reloaded.topic("orders").topic_id == info.topic_id
    assert reloaded.topic("orders").configs == {"retention.ms": "1000"}
    assert reloaded.cluster_id == controller.cluster_id and len(controller.cluster_id) == 22


@pytest.mark.parametrize("name,code", [("", 17), ("a" * 250, 17), ("bad/name", 17), ("..", 17)])
def test_illegal_topic_names(tmp_path, name, code):
    with pytest.raises(TopicError) as info:
        LocalController(tmp_path, 0).create_topic(name, 1, 1, {})
    assert info.value.error_code == code


def test_duplicate_topic_and_bad_counts(tmp_path):
    controller = LocalController(tmp_path, 0)
    controller.create_topic("t", 1, 1, {})
    errors = []
    for call in (lambda: controller.create_topic("t", 1, 1, {}),
                 lambda: controller.create_topic("u", 0, 1, {}),
                 lambda: controller.create_topic("v", 1, 3, {}),
                 lambda: controller.create_partitions("t", 1),
                 lambda: controller.delete_topic("nope")):
        with pytest.raises(TopicError) as info:
            call()
        errors.append(info.value.error_code)
    assert errors == [36, 37, 38, 37, 3]


def test_data_dir_of_another_broker_is_refused(tmp_path):
    LocalController(tmp_path, broker_id=1)
    with pytest.raises(ValueError, match="broker.id=1"):
        LocalController(tmp_path, broker_id=2)


def test_producer_ids_never_repeat_across_restarts(tmp_path):
    first = ProducerIdManager(tmp_path)
    ids = [first.next_id() for _ in range(3)]
    second = ProducerIdManager(tmp_path)
    later = second.next_id()
    assert ids == [0, 1, 2]
    assert later == BLOCK_SIZE  # the rest of the first block is skipped, never reused

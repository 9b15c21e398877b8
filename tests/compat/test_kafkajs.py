"""KafkaJS (npm `kafkajs` 2.2.4, a JavaScript implementation of the Kafka
protocol independent of librdkafka) against real broker processes, driven
through the Node scripts in tests/compat/kafkajs/ (tests/support/kafkajs.py).

Codecs: gzip is KafkaJS's own; snappy (kafkajs-snappy, pure JS), lz4
(kafkajs-lz4, a native addon compiled by node-gyp at `npm ci`) and zstd
(@sensejs/kafkajs-zstd-support over zstd-napi, compiled likewise) are
plugins. KafkaJS's own zstd plugin, @kafkajs/zstd 0.1.1, does not compile
against Node 20's headers (its cppzst 2.0.6 addon), so the zstd one is
the other published plugin.

KafkaJS only reads through consumer groups (it has no assign()), so every
read here is a group; the brokers start with
group.initial.rebalance.delay.ms=0 so a group forms at once. Clients
bootstrap at 127.0.0.1, the host the brokers advertise.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.support.compat import (
    CODEC_COUNT,
    CODECS,
    assert_same_partitions,
    make_messages,
    start_broker,
    unique_topic,
)
from tests.support.confluent import consume as confluent_consume
from tests.support.confluent import produce as confluent_produce
from tests.support.kafkajs import (
    connection,
    consume,
    incoming,
    produce,
    requires_kafkajs,
    run,
)

pytestmark = requires_kafkajs

FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}
# Kafka's codec ids in a batch's attributes (bits 0-2).
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
DELETE_RECORDS = 21


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    node = start_broker(tmp_path_factory.mktemp("kafkajs") / "data", FAST_GROUPS)
    yield node
    node.kill()


@pytest.fixture
def conn(broker):
    return connection(broker.bootstrap)


def admin(conn: dict, *steps: tuple) -> list[dict]:
    """Run admin steps ((op, arg, ...), ...) in one KafkaJS admin client; their answers."""
    answer = run("admin", {"connection": conn, "steps": [{"op": op, "args": list(args)} for op, *args in steps]})
    return answer["results"]


def results(conn: dict, *steps: tuple) -> list:
    """Like admin(), failing on any step's error."""
    answers = admin(conn, *steps)
    for (op, *_), answer in zip(steps, answers):
        assert "error" not in answer, f"{op}: {answer['error']}"
    return [answer["result"] for answer in answers]


def create_topic(conn: dict, prefix: str, partitions: int, configs: dict | None = None) -> str:
    topic = unique_topic(prefix)
    entries = [{"name": k, "value": v} for k, v in (configs or {}).items()]
    created, = results(conn, ("createTopics", {"topics": [{"topic": topic, "numPartitions": partitions,
                                                          "replicationFactor": 1, "configEntries": entries}],
                                              "waitForLeaders": True}))
    assert created is True
    return topic


def batch_codecs(data_dir: Path, topic: str) -> set[int]:
    """The codec ids of every batch in the topic's segment files, read from
    the v2 batch header (attributes at byte 21, Kafka's layout)."""
    found = set()
    for segment in sorted(data_dir.glob(f"{topic}-*/*.log")):
        data, position = segment.read_bytes(), 0
        while position + 23 <= len(data):
            length, = struct.unpack_from(">i", data, position + 8)
            attributes, = struct.unpack_from(">h", data, position + 21)
            found.add(attributes & 0x7)
            position += 12 + length
    return found


# --- produce / consume ---------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip_and_interop_with_librdkafka(broker, conn, codec):
    """KafkaJS writes batches with the codec (checked on disk) that KafkaJS
    and librdkafka read back field for field; and KafkaJS reads what
    librdkafka wrote with it."""
    topic, messages = unique_topic(f"kjs-{codec}"), make_messages(CODEC_COUNT, f"kjs-{codec}")
    produce(conn, topic, messages, compression=codec)
    assert batch_codecs(broker.data_dir, topic) == {CODEC_IDS[codec]}
    assert_same_partitions(messages, [incoming(r) for r in consume(conn, topic, len(messages), topic)])
    assert_same_partitions(messages, confluent_consume(broker.bootstrap, topic, expected_total=len(messages)))

    other, written = unique_topic(f"kjs-rd-{codec}"), make_messages(CODEC_COUNT, f"rd-{codec}")
    confluent_produce(broker.bootstrap, other, written, **{"compression.type": codec})
    assert batch_codecs(broker.data_dir, other) == {CODEC_IDS[codec]}
    assert_same_partitions(written, [incoming(r) for r in consume(conn, other, len(written), other)])


def test_node_of_two_processes_serves_kafkajs(broker_factory):
    """A node of two broker processes (ids 0 and 1, one port each): KafkaJS
    finds each partition's leader from Metadata and produces and reads
    through both."""
    node = broker_factory({**FAST_GROUPS, "num.processes": "2", "num.partitions": "4"})
    conn = connection(node.bootstrap)
    topic, messages = unique_topic("kjs-processes"), make_messages(2000, "kjs-processes", partitions=4)
    produce(conn, topic, messages, compression="gzip", batchSize=500)
    assert_same_partitions(messages, [incoming(r) for r in consume(conn, topic, len(messages), topic)])
    metadata, = results(conn, ("fetchTopicMetadata", {"topics": [topic]}))
    assert sorted(p["leader"] for p in metadata["topics"][0]["partitions"]) == [0, 0, 1, 1]


def test_idempotent_producer_writes_each_message_once(broker, conn):
    topic = create_topic(conn, "kjs-idempotent", 2)
    messages = make_messages(600, "kjs-idem", partitions=2)
    produce(conn, topic, messages, idempotent=True, batchSize=50)
    assert_same_partitions(messages, confluent_consume(broker.bootstrap, topic, expected_total=600,
                                                       partitions=range(2)))

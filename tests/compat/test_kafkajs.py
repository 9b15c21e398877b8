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
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.cli import kcore_cli
from tests.support.cluster import Cluster
from tests.support.compat import (
    CODEC_COUNT,
    CODECS,
    Message,
    assert_same_partitions,
    first_offset_at_or_after,
    make_messages,
    offsets_for_times_messages,
    start_broker,
    unique_topic,
    wait_until,
)
from tests.support.confluent import consume as confluent_consume
from tests.support.confluent import produce as confluent_produce
from tests.support.kafkajs import (
    Member,
    connection,
    consume,
    decode,
    incoming,
    outgoing,
    produce,
    requires_kafkajs,
    run,
)
from tests.support.secure_broker import SCRAM_PASSWORD, SCRAM_USER, USERS, SecureBroker, make_pki, start_secure_broker
from tests.support.transactions import READ_COMMITTED, READ_UNCOMMITTED, read_to_end, values
from tests.support.wire import served_api_versions

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


def error_types(error: dict | None) -> list[str | None]:
    """Kafka's error names in a described KafkaJS error, its causes and
    the errors it aggregates (lib.mjs describeError)."""
    if not error:
        return []
    found = [error["type"]] + [p["type"] for p in error.get("partitions", [])]
    for inner in [error.get("cause"), *error.get("errors", [])]:
        found += error_types(inner)
    return found


def create_topic(conn: dict, prefix: str, partitions: int, configs: dict | None = None) -> str:
    topic = unique_topic(prefix)
    entries = [{"name": k, "value": v} for k, v in (configs or {}).items()]
    created, = results(conn, ("createTopics", {"topics": [{"topic": topic, "numPartitions": partitions,
                                                          "replicationFactor": 1, "configEntries": entries}],
                                              "waitForLeaders": True}))
    assert created is True
    return topic


@dataclass(frozen=True)
class BatchHeader:
    partition: int
    codec: int
    producer_id: int
    base_sequence: int
    record_count: int


# The v2 batch header (Kafka's DefaultRecordBatch): attributes at byte 21,
# producerId, producerEpoch, baseSequence and the record count from 43.
_TAIL = struct.Struct(">qhii")


def batch_headers(data_dir: Path, topic: str) -> list[BatchHeader]:
    """Every batch header in the topic's segment files, read with struct."""
    found = []
    for directory in sorted(data_dir.glob(f"{topic}-*")):
        partition = int(directory.name.rsplit("-", 1)[1])
        for segment in sorted(directory.glob("*.log")):
            data, position = segment.read_bytes(), 0
            while position + 61 <= len(data):
                length, = struct.unpack_from(">i", data, position + 8)
                attributes, = struct.unpack_from(">h", data, position + 21)
                producer_id, _epoch, base_sequence, count = _TAIL.unpack_from(data, position + 43)
                found.append(BatchHeader(partition, attributes & 0x7, producer_id, base_sequence, count))
                position += 12 + length
    return found


def batch_codecs(data_dir: Path, topic: str) -> set[int]:
    return {header.codec for header in batch_headers(data_dir, topic)}


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

    # librdkafka sends a batch uncompressed when the codec would make it
    # larger, as it does a lone short record (zstd's frame adds ~10 bytes):
    # a 512-byte run makes every batch, even of one record, shrink.
    other = unique_topic(f"kjs-rd-{codec}")
    written = [replace(m, value=m.value + b"v" * 512) for m in make_messages(CODEC_COUNT, f"rd-{codec}")]
    confluent_produce(broker.bootstrap, other, written, **{"compression.type": codec})
    assert batch_codecs(broker.data_dir, other) == {CODEC_IDS[codec]}
    assert_same_partitions(written, [incoming(r) for r in consume(conn, other, len(written), other)])


def test_node_of_two_processes_serves_kafkajs(broker_factory):
    """A node of two broker processes (ids 0 and 1, one port each): KafkaJS
    finds each partition's leader from Metadata and produces and reads
    through both."""
    node = broker_factory({**FAST_GROUPS, "num.processes": "2", "num.partitions": "4"})
    conn = connection(node.bootstrap)
    topic, messages = unique_topic("kjs-processes"), make_messages(800, "kjs-processes", partitions=4)
    produce(conn, topic, messages, compression="gzip", batchSize=200)
    assert_same_partitions(messages, [incoming(r) for r in consume(conn, topic, len(messages), topic)])
    metadata, = results(conn, ("fetchTopicMetadata", {"topics": [topic]}))
    assert sorted(p["leader"] for p in metadata["topics"][0]["partitions"]) == [0, 0, 1, 1]


def test_idempotent_producer_writes_each_message_once(broker, conn):
    """KafkaJS's idempotent producer gets a producer id and writes each
    partition's batches with gapless sequences from 0, every message once."""
    topic = create_topic(conn, "kjs-idempotent", 2)
    messages = make_messages(600, "kjs-idem", partitions=2)
    produce(conn, topic, messages, idempotent=True, batchSize=50)
    assert_same_partitions(messages, confluent_consume(broker.bootstrap, topic, expected_total=600,
                                                       partitions=range(2)))
    headers = batch_headers(broker.data_dir, topic)
    assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0, headers
    for partition in range(2):
        batches = [h for h in headers if h.partition == partition]
        starts = [sum(h.record_count for h in batches[:index]) for index in range(len(batches))]
        assert [h.base_sequence for h in batches] == starts


# --- a consumer group across a killed member -------------------------------

GROUP_PARTITIONS = 6
PER_PARTITION = 150


def latest_assignment(member: Member, topic: str) -> set[int] | None:
    joins = [e for e in member.events() if e["event"] == "joined"]
    return set(joins[-1]["assignment"].get(topic, [])) if joins else None


def consumed_since_join(member: Member) -> list[dict]:
    """The member's messages after its latest join."""
    events = member.events()
    last_join = max((i for i, e in enumerate(events) if e["event"] == "joined"), default=len(events))
    return [e for e in events[last_join:] if e["event"] == "message"]


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, read by librdkafka (OffsetFetch
    without joining the group); partitions without one are left out."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(GROUP_PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


def group_values(count: int, tag: str) -> list[Message]:
    return [Message(i % GROUP_PARTITIONS, None, f"{tag}-{i}".encode(), (), 0) for i in range(count)]


def start_members(conn: dict, topic: str, group: str, tmp_path: Path, names: str, **options) -> list[Member]:
    request = {"connection": conn, "topic": topic, "groupId": group, **options}
    return [Member(request, tmp_path / f"member-{name}.log") for name in names]


def wait_for_split(members: list[Member], topic: str, victim: Member) -> None:
    """Until each member's latest assignment is a third of the partitions
    (one generation, all three in it) and the victim has read 30 messages
    in it."""
    def settled() -> bool:
        assignments = [latest_assignment(m, topic) or set() for m in members]
        split = sum(len(a) for a in assignments) == GROUP_PARTITIONS and all(assignments) and \
            set().union(*assignments) == set(range(GROUP_PARTITIONS))
        return split and len(consumed_since_join(victim)) >= 30
    wait_until(settled, 45, "three members sharing the partitions, the victim consuming")


def check_commits_at_kill(members: list[Member], victim: Member, owned: set[int], at_kill: dict[int, int]) -> None:
    """What the group holds for the victim's partitions: at least what the
    victim saw committed (KafkaJS's commit events), never past what was read."""
    by_victim = {(int(part["partition"]), int(part["offset"])) for e in victim.events()
                 if e["event"] == "commit" for t in e["offsets"] for part in t["partitions"]
                 if int(part["partition"]) in owned}
    assert any(offset > 1 for _, offset in by_victim), f"the victim committed nothing: {by_victim}"
    for partition, offset in by_victim:
        assert at_kill[partition] >= offset
    for partition in owned:
        read = max((e["offset"] for m in members for e in m.consumed() if e["partition"] == partition), default=-1)
        assert at_kill.get(partition, -1) <= read + 1, f"partition {partition} committed past what was read"


def check_survivors_resumed(survivors: list[Member], marks: list[int], owned: set[int],
                            at_kill: dict[int, int]) -> None:
    """Whoever took a partition of the victim started at its committed offset."""
    for partition in owned:
        if at_kill.get(partition, 0) == PER_PARTITION:
            continue  # the victim had finished it
        taken = [e["offset"] for s, mark in zip(survivors, marks)
                 for e in s.events()[mark:] if e["event"] == "message" and e["partition"] == partition]
        assert taken and min(taken) == at_kill.get(partition, 0), (
            f"partition {partition}: committed {at_kill.get(partition)} at the kill, survivors resumed at "
            f"{min(taken) if taken else None}")


@pytest.mark.timeout(150)
def test_group_survives_a_killed_member_and_resumes_from_committed_offsets(broker, conn, tmp_path):
    """Three KafkaJS members share six partitions; one is SIGKILLed while it
    consumes. After its session times out the others take its partitions
    from its last committed offsets, every message is consumed at least
    once, and a member started after the survivors left reads only what was
    produced after they had committed everything."""
    topic, group = create_topic(conn, "kjs-group", GROUP_PARTITIONS), unique_topic("kjs-members")
    produce(conn, topic, group_values(GROUP_PARTITIONS * PER_PARTITION, "first"))
    members = start_members(conn, topic, group, tmp_path, "abc", delayMs=10)
    victim, survivors = members[0], members[1:]
    try:
        wait_for_split(members, topic, victim)
        owned = latest_assignment(victim, topic) or set()
        victim.kill()
        time.sleep(1.0)  # a commit already on the wire when the victim died lands first
        at_kill = committed_offsets(broker.bootstrap, group, topic)
        marks = [len(s.events()) for s in survivors]
        check_commits_at_kill(members, victim, owned, at_kill)

        everything = {f"first-{i}".encode() for i in range(GROUP_PARTITIONS * PER_PARTITION)}
        wait_until(lambda: {decode(e["value"]) for m in members for e in m.consumed()} >= everything, 60,
                   "every message consumed by some member")
        check_survivors_resumed(survivors, marks, owned, at_kill)
        for survivor in survivors:
            assert survivor.stop() == 0, survivor.output()
        assert committed_offsets(broker.bootstrap, group, topic) == dict.fromkeys(range(GROUP_PARTITIONS),
                                                                                  PER_PARTITION)
    finally:
        for member in members:
            member.kill()

    later = group_values(60, "later")
    produce(conn, topic, later)
    newcomer, = start_members(conn, topic, group, tmp_path, "d")
    try:
        wait_until(lambda: len(newcomer.consumed()) >= len(later), 30, "the newcomer reading the later messages")
        assert sorted(decode(e["value"]) for e in newcomer.consumed()) == sorted(m.value for m in later)
    finally:
        newcomer.kill()


# --- transactions ----------------------------------------------------------


def txn_messages(label: str, count: int, partitions: int = 2) -> list[Message]:
    return [Message(i % partitions, None, f"{label}-{i}".encode(), (), 0) for i in range(count)]


def transaction(messages: list[Message], outcome: str, group: str | None = None,
                offsets: dict[str, dict[int, int]] | None = None) -> dict:
    step: dict = {"messages": [outgoing(m) for m in messages], "outcome": outcome}
    if offsets:
        step["offsets"] = {"consumerGroupId": group, "topics": [
            {"topic": topic, "partitions": [{"partition": p, "offset": str(o)} for p, o in by_partition.items()]}
            for topic, by_partition in offsets.items()]}
    return step


def test_transactions_commit_is_read_abort_is_hidden_and_offsets_follow_the_outcome(broker, conn):
    """A KafkaJS transactional producer commits, aborts and commits again,
    with consumer offsets (sendOffsets) in the first two: read_committed
    readers (KafkaJS's default, librdkafka's) see the committed records
    only, read_uncommitted ones see all, and the group holds the committed
    transaction's offsets, not the aborted one's."""
    topic, source = create_topic(conn, "kjs-txn", 2), create_topic(conn, "kjs-txn-source", 2)
    group = unique_topic("kjs-txn-group")
    first, aborted, second = txn_messages("first", 20), txn_messages("aborted", 20), txn_messages("second", 10)
    answer = run("transactions", {"connection": conn, "topic": topic, "transactionalId": unique_topic("kjs-txn-id"),
                                  "transactions": [
                                      transaction(first, "commit", group, {source: {0: 5, 1: 7}}),
                                      transaction(aborted, "abort", group, {source: {0: 50, 1: 70}}),
                                      transaction(second, "commit")]})
    assert all("error" not in r for r in answer["results"]), answer["results"]

    committed = [m.value for m in first + second]
    everything = [m.value for m in first + aborted + second]
    assert sorted(values(read_to_end(broker.bootstrap, topic, 2, READ_COMMITTED))) == sorted(committed)
    assert sorted(values(read_to_end(broker.bootstrap, topic, 2, READ_UNCOMMITTED))) == sorted(everything)
    # One more than there is: the reader waits out its 3 s for a record that must not come.
    read_committed = consume(conn, topic, len(committed) + 1, unique_topic("kjs-rc"), timeoutMs=3000)
    assert sorted(decode(r["value"]) for r in read_committed) == sorted(committed)
    read_uncommitted = consume(conn, topic, len(everything), unique_topic("kjs-ru"), readUncommitted=True)
    assert sorted(decode(r["value"]) for r in read_uncommitted) == sorted(everything)

    assert committed_offsets(broker.bootstrap, group, source) == {0: 5, 1: 7}
    fetched, = results(conn, ("fetchOffsets", {"groupId": group, "topics": [source]}))
    assert {p["partition"]: int(p["offset"]) for p in fetched[0]["partitions"]} == {0: 5, 1: 7}


# --- admin -------------------------------------------------------------------


def test_admin_creates_lists_grows_and_deletes_topics(conn):
    topic = create_topic(conn, "kjs-admin-topics", 2, {"retention.ms": "3600000"})
    validated = unique_topic("kjs-validate-only")
    again, listed, grown, shrunk, metadata, deleted, after = admin(
        conn,
        ("createTopics", {"topics": [{"topic": topic, "numPartitions": 2}]}),
        ("listTopics",),
        ("createPartitions", {"topicPartitions": [{"topic": topic, "count": 3}]}),
        ("createPartitions", {"topicPartitions": [{"topic": topic, "count": 2}]}),
        ("fetchTopicMetadata", {"topics": [topic]}),
        ("deleteTopics", {"topics": [topic]}),
        ("listTopics",))
    assert again == {"result": False}  # KafkaJS's answer to TOPIC_ALREADY_EXISTS
    assert topic in listed["result"]
    assert "error" not in grown, grown
    assert error_types(shrunk["error"]) == ["INVALID_PARTITIONS"]
    assert sorted(p["partitionId"] for p in metadata["result"]["topics"][0]["partitions"]) == [0, 1, 2]
    assert "error" not in deleted, deleted
    assert topic not in after["result"]

    # Without retries KafkaJS gives up at once on the retriable UNKNOWN_TOPIC_OR_PARTITION;
    # validateOnly without waitForLeaders (whose Metadata would ask for a topic not made).
    unknown, checked, bad_name, too_many_replicas, listed = admin(
        {**conn, "retries": 0},
        ("deleteTopics", {"topics": [unique_topic("kjs-never-created")]}),
        ("createTopics", {"validateOnly": True, "waitForLeaders": False, "topics": [{"topic": validated}]}),
        ("createTopics", {"topics": [{"topic": "not a topic name!"}]}),
        ("createTopics", {"topics": [{"topic": unique_topic("kjs-rf"), "replicationFactor": 3}]}),
        ("listTopics",))
    assert "UNKNOWN_TOPIC_OR_PARTITION" in error_types(unknown["error"]), unknown
    assert checked == {"result": True}
    assert "INVALID_TOPIC_EXCEPTION" in error_types(bad_name["error"]), bad_name
    assert "INVALID_REPLICATION_FACTOR" in error_types(too_many_replicas["error"]), too_many_replicas
    assert validated not in listed["result"]


def config_values(answer: dict) -> dict[str, tuple[str, bool]]:
    """{name: (value, isDefault)} of one describeConfigs resource."""
    resource, = answer["result"]["resources"]
    assert resource["errorCode"] == 0, resource
    return {e["configName"]: (e["configValue"], e["isDefault"]) for e in resource["configEntries"]}


def test_admin_describes_and_alters_configs_as_kafka_replaces_them(conn):
    """AlterConfigs (not incremental) replaces a topic's whole set of
    overrides, as in Kafka: a key it leaves out returns to its default.
    Synonyms as Kafka's ConfigHelper lists them: the topic's value, then
    the broker's from its primary synonym on (log.retention.ms, unset and
    without a default here, so retention.ms lists no broker synonym)."""
    topic = create_topic(conn, "kjs-admin-configs", 1, {"retention.ms": "3600000", "max.message.bytes": "200000"})
    names = ["retention.ms", "max.message.bytes", "cleanup.policy"]
    describe = ("describeConfigs", {"includeSynonyms": True,
                                    "resources": [{"type": "TOPIC", "name": topic, "configNames": names}]})
    before, altered, after, invalid, broker_configs = admin(
        conn, describe,
        ("alterConfigs", {"resources": [{"type": "TOPIC", "name": topic,
                                         "configEntries": [{"name": "retention.ms", "value": "7200000"}]}]}),
        describe,
        ("alterConfigs", {"resources": [{"type": "TOPIC", "name": topic,
                                         "configEntries": [{"name": "retention.ms", "value": "soon"}]}]}),
        ("describeConfigs", {"includeSynonyms": False,
                             "resources": [{"type": "BROKER", "name": "0", "configNames": ["num.partitions"]}]}))
    assert config_values(before) == {"retention.ms": ("3600000", False), "max.message.bytes": ("200000", False),
                                     "cleanup.policy": ("delete", True)}
    assert "error" not in altered, altered
    assert config_values(after) == {"retention.ms": ("7200000", False), "max.message.bytes": ("1048588", True),
                                    "cleanup.policy": ("delete", True)}
    synonyms = {e["configName"]: [(y["configName"], y["configValue"], y["configSource"]) for y in e["configSynonyms"]]
                for e in after["result"]["resources"][0]["configEntries"]}
    # configSource: 1 DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG (DescribeConfigs v1+).
    assert synonyms == {"retention.ms": [("retention.ms", "7200000", 1)],
                        "max.message.bytes": [("message.max.bytes", "1048588", 5)],
                        "cleanup.policy": [("log.cleanup.policy", "delete", 5)]}
    assert invalid["error"]["type"] == "INVALID_CONFIG", invalid
    assert config_values(broker_configs) == {"num.partitions": ("8", False)}


def test_admin_reads_and_moves_group_and_topic_offsets(conn):
    """fetchTopicOffsets / ByTimestamp against the produced messages;
    fetchOffsets after a group read; setOffsets moves the group where a
    KafkaJS member then resumes; resetOffsets stores Kafka's earliest
    sentinel (-2) as KafkaJS commits it."""
    topic, group = create_topic(conn, "kjs-admin-offsets", 3), unique_topic("kjs-admin-group")
    messages = offsets_for_times_messages("kjs", per_partition=20, partitions=3)
    produce(conn, topic, messages)
    assert len(consume(conn, topic, len(messages), group)) == len(messages)  # commits all on leaving
    probe = messages[25].timestamp
    topic_offsets, by_time, fetched, moved, after_set = results(
        conn,
        ("fetchTopicOffsets", topic),
        ("fetchTopicOffsetsByTimestamp", topic, probe),
        ("fetchOffsets", {"groupId": group, "topics": [topic]}),
        ("setOffsets", {"groupId": group, "topic": topic, "partitions": [{"partition": 1, "offset": "15"}]}),
        ("fetchOffsets", {"groupId": group, "topics": [topic]}))
    assert {o["partition"]: (int(o["low"]), int(o["high"])) for o in topic_offsets} == dict.fromkeys(range(3), (0, 20))
    assert {o["partition"]: int(o["offset"]) for o in by_time} == {
        p: first_offset_at_or_after(messages, p, probe) for p in range(3)}
    assert group_offsets(fetched) == dict.fromkeys(range(3), 20)
    assert group_offsets(after_set) == {0: 20, 1: 15, 2: 20}
    # Had another partition restarted anywhere but its end, its records would be among these.
    resumed = consume(conn, topic, 5, group, fromBeginning=False)
    assert sorted((r["partition"], r["offset"]) for r in resumed) == [(1, o) for o in range(15, 20)]

    _, after_reset = results(conn, ("resetOffsets", {"groupId": group, "topic": topic, "earliest": True}),
                             ("fetchOffsets", {"groupId": group, "topics": [topic]}))
    assert group_offsets(after_reset) == dict.fromkeys(range(3), -2)


def group_offsets(answer: list[dict]) -> dict[int, int]:
    topic, = answer
    return {p["partition"]: int(p["offset"]) for p in topic["partitions"]}


def test_admin_describes_lists_and_deletes_groups(conn):
    topic, group = create_topic(conn, "kjs-admin-groups", 1), unique_topic("kjs-admin-described")
    produce(conn, topic, txn_messages("g", 5, partitions=1))
    consume(conn, topic, 5, group)
    described, listed, deleted, after = results(conn, ("describeGroups", [group]), ("listGroups",),
                                               ("deleteGroups", [group]), ("listGroups",))
    assert [(g["groupId"], g["state"], g["protocolType"], g["members"]) for g in described["groups"]] == [
        (group, "Empty", "consumer", [])]
    assert {"groupId": group, "protocolType": "consumer"} in listed["groups"]
    assert deleted == [{"groupId": group, "errorCode": 0}]
    assert group not in [g["groupId"] for g in after["groups"]]


def serves_delete_records(broker) -> bool:
    return DELETE_RECORDS in served_api_versions(broker.port)


def test_admin_delete_topic_records_moves_the_log_start(broker, conn):
    """deleteTopicRecords (DeleteRecords, API 21): the log start moves to
    the offset asked (-1: the high watermark), readers start there, and an
    offset past the high watermark is refused with OFFSET_OUT_OF_RANGE."""
    if not serves_delete_records(broker):
        pytest.skip("the broker does not advertise DeleteRecords (API 21) in ApiVersions")
    topic = create_topic(conn, "kjs-delete-records", 2)
    produce(conn, topic, txn_messages("d", 40))
    # deleteTopicRecords looks leaders up in metadata the admin already
    # holds (KafkaJSTopicMetadataNotLoaded otherwise): load it first.
    _, deleted, offsets, past = admin(
        conn,
        ("fetchTopicMetadata", {"topics": [topic]}),
        ("deleteTopicRecords", {"topic": topic, "partitions": [{"partition": 0, "offset": "5"},
                                                               {"partition": 1, "offset": "-1"}]}),
        ("fetchTopicOffsets", topic),
        ("deleteTopicRecords", {"topic": topic, "partitions": [{"partition": 0, "offset": "21"}]}))
    assert "error" not in deleted, deleted
    assert {o["partition"]: (int(o["low"]), int(o["high"])) for o in offsets["result"]} == {0: (5, 20), 1: (20, 20)}
    # The retrier wraps the per-partition error in a KafkaJSNonRetriableError.
    assert [p["type"] for p in past["error"]["cause"]["partitions"]] == ["OFFSET_OUT_OF_RANGE"], past
    read = consume(conn, topic, 16, unique_topic("kjs-after-delete"), timeoutMs=3000)
    assert sorted((r["partition"], r["offset"]) for r in read) == [(0, o) for o in range(5, 20)]


# --- TLS, SASL and ACLs ---------------------------------------------------------

SECURED = {**FAST_GROUPS, "num.partitions": "2", "authorizer.class.name": "kcore", "super.users": "User:admin",
           # Topics without ACLs stay open, so the SASL round trips need none.
           "allow.everyone.if.no.acl.found": "true"}


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory):
    """A broker with a listener per security protocol (tests/support/
    secure_broker.py), the ACL authorizer on, User:admin its super user."""
    pki = make_pki(tmp_path_factory.mktemp("kafkajs-pki"))
    node = start_secure_broker(tmp_path_factory.mktemp("kafkajs-secure") / "data", pki, SECURED)
    added = kcore_cli("users", "add", SCRAM_USER, "--password", SCRAM_PASSWORD,
                      "--bootstrap-server", node.address("PLAINTEXT"))
    assert added.returncode == 0, added.stderr
    yield node
    node.process.kill()


def secure_conn(node: SecureBroker, listener: str, mechanism: str | None = None, user: str | None = None,
                password: str | None = None, **extra) -> dict:
    conn = connection(node.address(listener), ssl={"ca": str(node.pki.ca_file)}, **extra)
    if mechanism is not None:
        conn["sasl"] = {"mechanism": mechanism.lower(), "username": user, "password": password}
    return conn


def user_of(mechanism: str) -> tuple[str, str]:
    return ("alice", USERS["alice"]) if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)


@pytest.mark.parametrize("listener, mechanism", [("SSL", None), ("SASL_SSL", "PLAIN"),
                                                 ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_tls_and_sasl_produce_and_consume(secure_broker, listener, mechanism):
    conn = secure_conn(secure_broker, listener, mechanism, *(user_of(mechanism) if mechanism else (None, None)))
    topic, messages = unique_topic("kjs-secure"), make_messages(50, "kjs-secure", partitions=2)
    produce(conn, topic, messages, compression="gzip")
    assert_same_partitions(messages, [incoming(r) for r in consume(conn, topic, len(messages), topic)])


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_wrong_password_is_refused(secure_broker, mechanism):
    user, _ = user_of(mechanism)
    conn = secure_conn(secure_broker, "SASL_SSL", mechanism, user, "wrong", retries=0)
    answer = run("admin", {"connection": conn, "steps": [{"op": "listTopics"}]})
    assert answer["results"][0]["error"]["name"] == "KafkaJSSASLAuthenticationError", answer


def test_acls_created_described_and_deleted_decide_who_writes(secure_broker):
    """The super user's KafkaJS admin allows and denies alice WRITE on a
    topic: the DENY wins; once deleteAcls removes it alice writes, while
    another user, whom no ACL names, is refused."""
    admin_conn = secure_conn(secure_broker, "SASL_SSL", "PLAIN", "admin", USERS["admin"])
    alice = secure_conn(secure_broker, "SASL_SSL", "PLAIN", "alice", USERS["alice"], retries=1)
    other = secure_conn(secure_broker, "SASL_SSL", "SCRAM-SHA-256", SCRAM_USER, SCRAM_PASSWORD, retries=1)
    topic = create_topic(admin_conn, "kjs-acl", 1)
    binding = {"resourceType": "TOPIC", "resourceName": topic, "resourcePatternType": "LITERAL",
               "principal": "User:alice", "host": "*", "operation": "WRITE"}
    allow, deny = {**binding, "permissionType": "ALLOW"}, {**binding, "permissionType": "DENY"}
    on_topic = {"resourceType": "TOPIC", "resourceName": topic, "resourcePatternType": "ANY",
                "operation": "ANY", "permissionType": "ANY"}
    created, described = results(admin_conn, ("createAcls", {"acl": [allow, deny]}), ("describeAcls", on_topic))
    assert created is True
    assert acl_entries(described) == {("User:alice", "*", "WRITE", "ALLOW"), ("User:alice", "*", "WRITE", "DENY")}

    def write(conn: dict) -> list[str | None]:
        answer = run("produce", {"connection": conn, "topic": topic, "allowAutoTopicCreation": False,
                                 "messages": [outgoing(Message(0, None, b"x", (), 0))]})
        return error_types(answer.get("error"))

    assert "TOPIC_AUTHORIZATION_FAILED" in write(alice)
    deleted, remaining = results(admin_conn, ("deleteAcls", {"filters": [{**deny, "operation": "ANY"}]}),
                                 ("describeAcls", on_topic))
    matched, = deleted["filterResponses"]
    assert [(a["principal"], a["permissionType"]) for a in matched["matchingAcls"]] == [("User:alice", "DENY")]
    assert acl_entries(remaining) == {("User:alice", "*", "WRITE", "ALLOW")}
    assert write(alice) == []
    assert "TOPIC_AUTHORIZATION_FAILED" in write(other)


def acl_entries(described: dict) -> set[tuple[str, str, str, str]]:
    return {(a["principal"], a["host"], a["operation"], a["permissionType"])
            for resource in described["resources"] for a in resource["acls"]}


# --- a 3-broker ZooKeeper cluster ------------------------------------------------


@pytest.fixture
def cluster(tmp_path, zookeeper):
    """Three brokers (ids 1-3) on the test's ZooKeeper (tests/support/cluster.py)."""
    brokers = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3, {"num.partitions": "3"})
    try:
        yield brokers.start()
    finally:
        brokers.kill_all()


@pytest.mark.timeout(120)
def test_cluster_replicates_and_kafkajs_follows_a_killed_leader(cluster):
    """KafkaJS bootstrapped at all three brokers: acks=all writes to a topic
    of replication factor 3, a transaction, a group read; then the leader
    of partition 0 is SIGKILLed and KafkaJS writes on through the new
    leader, and the group resumes where it committed (its coordinator may
    have moved). The group reads first while all three brokers live: the
    offsets topic, created on first use with replication factor 3, cannot
    be created with two (Kafka's offsets.topic.replication.factor)."""
    conn = connection(cluster.bootstrap)
    topic, group = unique_topic("kjs-cluster"), unique_topic("kjs-cluster-group")
    created, = results(conn, ("createTopics", {"topics": [{"topic": topic, "numPartitions": 3,
                                                          "replicationFactor": 3}], "waitForLeaders": True}))
    assert created is True
    cluster.wait_for(lambda: cluster.fully_replicated(topic, 3, 3), "the topic fully replicated")
    before, in_txn = make_messages(300, "before", partitions=3), txn_messages("txn", 9, 3)
    produce(conn, topic, before, compression="gzip", acks=-1)
    answer = run("transactions", {"connection": conn, "topic": topic, "transactionalId": unique_topic("kjs-ctxn"),
                                  "transactions": [transaction(in_txn, "commit")]})
    assert all("error" not in r for r in answer["results"]), answer["results"]
    read = [incoming(r) for r in consume(conn, topic, len(before) + len(in_txn), group)]
    assert_same_partitions(before, [m for m in read if not m.value.startswith(b"txn-")])
    assert sorted(m.value for m in read if m.value.startswith(b"txn-")) == sorted(m.value for m in in_txn)

    victim = cluster.wait_leader(topic, 0)
    cluster.brokers[victim].kill()
    cluster.wait_for(lambda: cluster.leader(topic, 0) not in (victim, -1), "a new leader of partition 0")
    after = make_messages(300, "after", partitions=3)
    produce(conn, topic, after, acks=-1)
    # A record read before, if it came again, would come first in its partition.
    read = consume(conn, topic, len(after), group, timeoutMs=30000)
    assert_same_partitions(after, [incoming(r) for r in read])

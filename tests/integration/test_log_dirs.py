"""A broker with several log dirs (JBOD), as Kafka 4.2 serves them:
partitions spread over the dirs, DescribeLogDirs to kafka-python and to
`kcore log-dirs describe`, replicas moved between dirs while
confluent-kafka produces (every acknowledged record read once, the new
place kept across a restart), `kcore reassign-partitions` with
``log_dirs``, and Kafka's answers to bad input and to a principal without
the cluster ACLs. Real broker processes, real clients."""
from __future__ import annotations

import json
import socket
import struct
from types import SimpleNamespace

from kafka import KafkaAdminClient
from kafka.errors import LogDirNotFoundError, NoError

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.cli import kcore_cli
from tests.support.cluster import ProducerLoad, check_acknowledged_survived, consume_all
from tests.support.log_dirs import alter, describe, log_dirs_setting, placement, wait_for_move
from tests.support.wire import WireClient, batch, create_topic, produce

SMALL_SEGMENTS = {"segment.bytes": str(256 << 10)}


def jbod_broker(broker_factory, tmp_path, count=3, **overrides):
    dirs = [tmp_path / f"disk-{i}" for i in range(count)]
    broker = broker_factory({"log.dirs": log_dirs_setting(*dirs), **overrides})
    return broker, dirs


def fill(client: WireClient, topic: str, partition: int, batches: int, value_bytes: int = 4096) -> None:
    for number in range(batches):
        result = produce(client, topic, batch([b"%08d" % number + b"x" * value_bytes] * 16),
                         partition=partition)
        assert result.error_code == ErrorCode.NONE


def test_partitions_spread_and_kafka_python_describes_each_dir(broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path)
    client = WireClient(broker.port)
    create_topic(client, "spread", partitions=6)
    fill(client, "spread", 4, 3)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        [answer] = admin.describe_log_dirs()
        per_dir = {d["log_dir"]: d for d in answer["log_dirs"]}
        assert sorted(per_dir) == sorted(str(d) for d in dirs)
        counts = {path: sum(len(t["partitions"]) for t in d["topics"]) for path, d in per_dir.items()}
        assert sorted(counts.values()) == [2, 2, 2]
        written = [p for d in per_dir.values() for t in d["topics"] for p in t["partitions"]
                   if t["name"] == "spread" and p["partition_index"] == 4]
        assert len(written) == 1 and written[0]["partition_size"] > 3 * 16 * 4096
        assert (written[0]["offset_lag"], written[0]["is_future_key"]) == (0, False)
        assert all(d["error_code"] == 0 and 0 < d["usable_bytes"] <= d["total_bytes"]
                   for d in per_dir.values())
        [only] = admin.describe_log_dirs(topic_partitions={"spread": [4]})
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for d in only["log_dirs"] for t in d["topics"]] == [("spread", [4])]
    finally:
        admin.close()
    for version in range(1, 6):  # every version Kafka 4.2 serves
        results = describe(client, {"spread": [0, 1, 99], "nope": [0]}, version).results
        assert sorted(p.partition_index for r in results for t in r.topics for p in t.partitions) \
            == [0, 1]
    client.close()


def test_kcore_log_dirs_describe_prints_kafkas_json(broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path, count=2)
    client = WireClient(broker.port)
    create_topic(client, "a", partitions=2)
    create_topic(client, "b", partitions=1)
    fill(client, "a", 0, 1)
    done = kcore_cli("log-dirs", "describe", "--bootstrap-server", broker.bootstrap,
                     "--topic-list", "a")
    assert done.returncode == 0, done.stderr
    first, second, document = done.stdout.splitlines()
    assert first == "Querying brokers for log directories information"
    assert second == "Received log directory information from brokers 0"
    shown = json.loads(document)
    assert shown["version"] == 1 and [b["broker"] for b in shown["brokers"]] == [0]
    log_dirs = shown["brokers"][0]["logDirs"]
    assert sorted(d["logDir"] for d in log_dirs) == sorted(str(d) for d in dirs)
    partitions = sorted((p["partition"], p["isFuture"], p["offsetLag"])
                        for d in log_dirs for p in d["partitions"])
    assert partitions == [("a-0", False, 0), ("a-1", False, 0)]
    assert all(d["error"] is None for d in log_dirs)
    missing = kcore_cli("log-dirs", "describe", "--bootstrap-server", broker.bootstrap,
                        "--broker-list", "0,7")
    assert missing.returncode == 1
    assert "The given brokers do not exist from --broker-list: 7" in missing.stderr
    client.close()


def test_a_replica_moves_under_load_and_every_acknowledged_record_is_read_once(
        broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path, count=2)
    client = WireClient(broker.port)
    create_topic(client, "moving", partitions=1, configs=SMALL_SEGMENTS)
    source = placement(client)[("moving", 0, False)]
    target = next(d for d in dirs if str(d) != source)
    target_of = SimpleNamespace(bootstrap=broker.bootstrap)
    load = ProducerLoad(target_of, "moving", 1, max_messages=400_000, max_seconds=60,
                        settings={"batch.size": 65536, "linger.ms": 5}).start()
    try:
        while load.acked_count() < 150_000:  # a few MB: the copy takes many steps
            load._thread.join(0.1)
        assert alter(client, {("moving", 0): str(target)}) == {("moving", 0): ErrorCode.NONE}
        during = describe(client, {"moving": [0]})
        future = [(r.log_dir, p) for r in during.results for t in r.topics for p in t.partitions
                  if p.is_future_key]
        if future:
            assert [path for path, _ in future] == [str(target)]
            # How far the copy is behind: usually > 0 here, 0 once it caught
            # up (a busy machine slows the producer more than the copy).
            assert future[0][1].offset_lag >= 0
        else:  # the copy caught up and swapped in before DescribeLogDirs
            assert placement(client)[("moving", 0, False)] == str(target)
        wait_for_move(client, "moving", 0, target)
    finally:
        load.stop()
    assert not load.errors, load.errors[:3]
    found = consume_all(target_of, "moving", 1, timeout=120)
    assert check_acknowledged_survived(load, found) == load.acked_count() > 150_000
    assert len({value for _, value in found[0]}) == len(found[0])
    client.close()
    broker.restart()
    client = WireClient(broker.port)
    assert placement(client)[("moving", 0, False)] == str(target)
    assert not list((tmp_path / source).glob("moving-0*"))
    again = consume_all(target_of, "moving", 1, timeout=120)
    assert again == found
    client.close()


def test_reassign_partitions_with_log_dirs_moves_and_verifies(broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path, count=2)
    client = WireClient(broker.port)
    create_topic(client, "plan", partitions=2)
    fill(client, "plan", 0, 20)
    where = placement(client)
    targets = {index: next(str(d) for d in dirs if str(d) != where[("plan", index, False)])
               for index in range(2)}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "plan", "partition": index, "replicas": [0], "log_dirs": [targets[index]]}
        for index in range(2)]}))
    common = ["--bootstrap-server", broker.bootstrap, "--reassignment-json-file", str(plan)]
    executed = kcore_cli("reassign-partitions", "--execute", *common)
    assert executed.returncode == 0, executed.stderr
    for index in range(2):
        assert (f"Successfully started moving log directory to {targets[index]} for replica "
                f"plan-{index} with broker 0") in executed.stdout
    for index in range(2):
        wait_for_move(client, "plan", index, tmp_path / targets[index])
    verified = kcore_cli("reassign-partitions", "--verify", *common)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "Reassignment of replica plan-0-0 completed successfully." in verified.stdout
    back = tmp_path / "back.json"
    back.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "plan", "partition": 0, "replicas": [0], "log_dirs": [where[("plan", 0, False)]]}]}))
    unfinished = kcore_cli("reassign-partitions", "--verify", "--bootstrap-server", broker.bootstrap,
                           "--reassignment-json-file", str(back))
    assert unfinished.returncode == 1
    assert (f"Partition plan-0 on broker 0 is not being moved from log dir {targets[0]} to "
            f"{where[('plan', 0, False)]}.") in unfinished.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "plan", "partition": 0, "replicas": [0], "log_dirs": ["/not/a/log/dir"]}]}))
    refused = kcore_cli("reassign-partitions", "--execute", "--bootstrap-server", broker.bootstrap,
                        "--reassignment-json-file", str(bad))
    assert refused.returncode == 1 and "LOG_DIR_NOT_FOUND" in refused.stderr
    client.close()


def test_kafka_python_alter_replica_log_dirs_and_kafkas_errors(broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path, count=2)
    client = WireClient(broker.port)
    create_topic(client, "k", partitions=1)
    fill(client, "k", 0, 2)
    target = next(d for d in dirs if str(d) != placement(client)[("k", 0, False)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        answers = admin.alter_replica_log_dirs({("k", 0, 0): str(target),
                                                ("k", 5, 0): str(target)})
        assert answers[("k", 0, 0)] is NoError
        assert answers[("k", 5, 0)].errno == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert admin.alter_replica_log_dirs({("k", 0, 0): "/elsewhere"})[("k", 0, 0)] \
            is LogDirNotFoundError
    finally:
        admin.close()
    wait_for_move(client, "k", 0, target)
    relative = alter(client, {("k", 0): target.name}, version=1)
    assert relative == {("k", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    assert alter(client, {("gone", 0): str(target)}) == {("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    client.close()


def test_malformed_log_dir_requests_close_only_their_connection(broker_factory, tmp_path):
    broker, dirs = jbod_broker(broker_factory, tmp_path, count=2)
    # A topics / dirs array claiming 1000 entries, then nothing: flexible
    # (header tag buffer, compact length 1000 + 1 as a varint) and not.
    for api_key, version, body in ((ApiKey.DESCRIBE_LOG_DIRS, 4, b"\x00\xe9\x07"),
                                   (ApiKey.ALTER_REPLICA_LOG_DIRS, 1, struct.pack(">i", 1000))):
        header = struct.pack(">hhih", api_key, version, 1, 1) + b"t"
        raw = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        raw.sendall(struct.pack(">i", len(header + body)) + header + body)
        assert raw.recv(1) == b""
        raw.close()
    old = WireClient(broker.port)
    frame = struct.pack(">hhih", ApiKey.DESCRIBE_LOG_DIRS, 0, 1, 1) + b"t" + struct.pack(">i", -1)
    old.send_raw(struct.pack(">i", len(frame)) + frame)  # v0 left Kafka in 4.0
    assert old.read_frame() is None or old.is_closed_by_peer()
    client = WireClient(broker.port)
    assert sorted(r.log_dir for r in describe(client).results) == sorted(str(d) for d in dirs)
    client.close()


def test_log_dir_apis_need_describe_and_alter_on_the_cluster(broker_factory, tmp_path):
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourceType

    from tests.support.acls import admin_for, grant, secured_broker
    dirs = [tmp_path / "x", tmp_path / "y"]
    broker = secured_broker(broker_factory, ["guarded"], **{"log.dirs": log_dirs_setting(*dirs)})
    admin = admin_for(broker)
    grant(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE,
          permission=AclPermissionType.DENY)
    client = WireClient(broker.port)
    refused = describe(client, version=3)
    assert (refused.error_code, refused.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    target = str(dirs[0])
    assert alter(client, {("guarded", 0): target})[("guarded", 0)] == ErrorCode.NONE
    grant(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER,
          permission=AclPermissionType.DENY)
    assert alter(client, {("guarded", 0): target, ("guarded", 1): target}, version=1) == {
        ("guarded", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ("guarded", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    client.close()

"""Dynamic broker configs and replication throttles on a real cluster:
three kcore brokers, a real ZooKeeper, confluent-kafka's AdminClient,
producer and consumer, and the `kcore configs` / `kcore reassign-partitions`
command lines.

Timing bounds are lower bounds the throttle guarantees (a 1 MB/s throttle
cannot move 8 MB in under ~7 s) and comparisons; no tight upper bound.
Every wait is bounded (Cluster.wait_for, 30 s unless said).
"""
from __future__ import annotations

import json
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

from tests.support import free_port
from tests.support.cli import kcore_cli
from tests.support.cluster import Cluster, consume_all
from tests.support.metrics import scrape

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
VALUE_BYTES = 10_000
MESSAGES = 800  # ~8 MB per moved partition
THROTTLE = 1_000_000  # bytes/s
REPLICA_FETCH_MAX_BYTES = 1_048_576  # Kafka's default
MOVE_TIMEOUT_S = 90.0


def describe_broker(cluster, broker_id: int) -> dict:
    resource = ConfigResource("broker", str(broker_id))
    return cluster.admin.describe_configs([resource])[resource].result(timeout=30)


def describe_topic(cluster, topic: str) -> dict:
    resource = ConfigResource("topic", topic)
    return cluster.admin.describe_configs([resource])[resource].result(timeout=30)


def configs_cli(cluster, *args: str):
    return kcore_cli("configs", "--bootstrap-server", cluster.bootstrap, "--entity-type", "brokers",
                     *args)


def reassign_cli(cluster, *args: str):
    return kcore_cli("reassign-partitions", "--bootstrap-server", cluster.bootstrap, *args)


def test_dynamic_rate_reaches_every_broker_and_survives_a_restart(cluster):
    resource = ConfigResource("broker", "2", incremental_configs=[
        ConfigEntry(LEADER_RATE, "3000000", incremental_operation=AlterConfigOpType.SET)])
    cluster.admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    entry = describe_broker(cluster, 2)[LEADER_RATE]
    assert (entry.value, entry.source, entry.is_read_only) == (
        "3000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    default = configs_cli(cluster, "--entity-default", "--alter", "--add-config", f"{FOLLOWER_RATE}=4000000")
    assert default.returncode == 0, default.stderr
    for broker_id in (1, 2, 3):  # applied by each broker from the ZooKeeper notification
        cluster.wait_for(lambda b=broker_id: describe_broker(cluster, b)[FOLLOWER_RATE].source
                         == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
                         f"broker {broker_id} sees the cluster default")
    assert describe_broker(cluster, 1)[LEADER_RATE].source == ConfigSource.DEFAULT_CONFIG.value
    cluster.brokers[2].restart()
    cluster.wait_for(lambda: len(cluster.metadata().brokers) == 3, "broker 2 is back")
    after = describe_broker(cluster, 2)
    assert (after[LEADER_RATE].value, after[LEADER_RATE].source) == (
        "3000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert (after[FOLLOWER_RATE].value, after[FOLLOWER_RATE].source) == (
        "4000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    described = configs_cli(cluster, "--entity-name", "2", "--describe")
    assert f"  {LEADER_RATE}=3000000 source=DYNAMIC_BROKER_CONFIG" in described.stdout
    refused = configs_cli(cluster, "--entity-name", "2", "--alter", "--add-config", "log.dirs=/tmp/x")
    assert refused.returncode == 1 and "Cannot update these configs dynamically" in refused.stderr


def fill(cluster, topics: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 5, "batch.size": 262144})
    value = b"x" * VALUE_BYTES
    for seq in range(MESSAGES):
        for topic in topics:
            producer.produce(topic, value=value, key=str(seq).encode(), partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0


def move(cluster, plan_path, topic: str, target: list[int], *extra: str) -> float:
    """Seconds from --execute until the target replicas are all in sync."""
    plan_path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": target}]}))
    started = time.monotonic()
    execute = reassign_cli(cluster, "--reassignment-json-file", str(plan_path), "--execute", *extra)
    assert execute.returncode == 0, execute.stderr
    cluster.wait_for(lambda: sorted(cluster.partitions(topic)[0].isrs) == sorted(target)
                     and sorted(cluster.partitions(topic)[0].replicas) == sorted(target),
                     f"{topic} moved to {target}", timeout=MOVE_TIMEOUT_S)
    return time.monotonic() - started


def test_throttled_move_is_slowed_to_the_rate_and_verify_removes_the_throttle(tmp_path, zookeeper):
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3)
    ports = {broker_id: free_port() for broker_id in cluster.brokers}
    for broker_id, broker in cluster.brokers.items():
        broker.overrides["http.listeners"] = f"http://127.0.0.1:{ports[broker_id]}"
    try:
        cluster.start()
        check_throttled_move(cluster, ports, tmp_path)
    finally:
        cluster.kill_all()


def check_throttled_move(cluster, ports: dict[int, int], tmp_path) -> None:
    for name in ("free", "held"):
        futures = cluster.admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[[1]])])
        futures[name].result(timeout=30)
    cluster.create_topic("other", 1, 3)
    fill(cluster, ["free", "held"])
    free_s = move(cluster, tmp_path / "free.json", "free", [1, 2])

    plan = tmp_path / "held.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "held", "partition": 0, "replicas": [1, 3]}]}))
    started = time.monotonic()
    execute = reassign_cli(cluster, "--reassignment-json-file", str(plan), "--execute",
                           "--throttle", str(THROTTLE))
    assert execute.returncode == 0, execute.stderr
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in execute.stdout
    topic_configs = describe_topic(cluster, "held")
    assert (topic_configs[LEADER_REPLICAS].value, topic_configs[FOLLOWER_REPLICAS].value) == ("0:1", "0:3")
    for broker_id in (1, 3):
        rates = describe_broker(cluster, broker_id)
        assert rates[LEADER_RATE].value == rates[FOLLOWER_RATE].value == str(THROTTLE)

    # Another topic on the same brokers is neither throttled nor slowed:
    # written with acks=all and read back in full while the move crawls.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for seq in range(2000):
        producer.produce("other", value=f"o{seq}".encode(), partition=0)
    assert producer.flush(30) == 0
    values = [value for _, value in consume_all(cluster, "other", 1, timeout=30)[0]]
    assert values == [f"o{seq}" for seq in range(2000)]
    in_flight = reassign_cli(cluster, "--reassignment-json-file", str(plan), "--verify")
    assert in_flight.returncode == 1, "the throttled move ended before the other topic was read"
    assert "still in progress" in in_flight.stdout

    cluster.wait_for(lambda: sorted(cluster.partitions("held")[0].isrs) == [1, 3],
                     "held moved to [1, 3]", timeout=MOVE_TIMEOUT_S)
    held_s = time.monotonic() - started
    print(f"8 MB move: {free_s:.2f} s unthrottled, {held_s:.2f} s at {THROTTLE} B/s")
    # 8 MB at 1 MB/s: the rate allows ~1 MB per elapsed second plus one
    # answer of replica.fetch.max.bytes (1 MiB), so at least ~6.5 s.
    assert held_s >= 5.0
    assert free_s < held_s
    moved = MESSAGES * VALUE_BYTES
    assert scrape(f"http://127.0.0.1:{ports[1]}")[("kafka_server_leaderreplication_bytes_total", ())] >= moved
    # The new follower may send its first fetch before the throttled-replica
    # config reaches it (a config change notification, as in Kafka): that
    # one answer, up to replica.fetch.max.bytes, is not counted.
    followed = scrape(f"http://127.0.0.1:{ports[3]}")[("kafka_server_followerreplication_bytes_total", ())]
    assert followed >= moved - REPLICA_FETCH_MAX_BYTES
    assert scrape(f"http://127.0.0.1:{ports[2]}")[("kafka_server_followerreplication_bytes_total", ())] == 0

    cluster.wait_for(lambda: reassign_cli(cluster, "--reassignment-json-file", str(plan),
                                          "--verify").returncode == 0, "--verify says complete")
    topic_configs = describe_topic(cluster, "held")
    assert topic_configs[LEADER_REPLICAS].value == topic_configs[FOLLOWER_REPLICAS].value == ""
    for broker_id in (1, 2, 3):
        assert describe_broker(cluster, broker_id)[LEADER_RATE].source == ConfigSource.DEFAULT_CONFIG.value
    assert len(consume_all(cluster, "held", 1)[0]) == MESSAGES


def set_topic_config(cluster, topic: str, key: str, value: str) -> None:
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    cluster.admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def test_the_leader_and_the_follower_side_each_throttle_on_their_own(cluster, tmp_path):
    for name in ("lead", "follow"):
        futures = cluster.admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[[1]])])
        futures[name].result(timeout=30)
    fill(cluster, ["lead", "follow"])
    # Leader side alone: broker 1 sends lead-0 to a follower out of the ISR at 1 MB/s.
    assert configs_cli(cluster, "--entity-name", "1", "--alter", "--add-config",
                       f"{LEADER_RATE}={THROTTLE}").returncode == 0
    set_topic_config(cluster, "lead", LEADER_REPLICAS, "0:1")
    lead_s = move(cluster, tmp_path / "lead.json", "lead", [1, 2])
    assert configs_cli(cluster, "--entity-name", "1", "--alter", "--delete-config",
                       LEADER_RATE).returncode == 0
    # Follower side alone: broker 3 fetches follow-0 at 1 MB/s.
    assert configs_cli(cluster, "--entity-name", "3", "--alter", "--add-config",
                       f"{FOLLOWER_RATE}={THROTTLE}").returncode == 0
    set_topic_config(cluster, "follow", FOLLOWER_REPLICAS, "0:3")
    follow_s = move(cluster, tmp_path / "follow.json", "follow", [1, 3])
    print(f"8 MB moves at {THROTTLE} B/s: {lead_s:.2f} s leader side, {follow_s:.2f} s follower side")
    assert lead_s >= 5.0 and follow_s >= 5.0
    assert len(consume_all(cluster, "follow", 1)[0]) == MESSAGES

"""ACLs and quotas in a ZooKeeper cluster: stored in Kafka's znodes and
learnt by every broker. Real ZooKeeper, real broker processes.

Without authentication every connection, the brokers' own included, is
User:ANONYMOUS; a cluster with the authorizer on therefore names it in
super.users (the brokers' principal must be a super user, as in Kafka),
which makes ACL checks moot here: what is checked is that an ACL made on
one broker reaches the others and ZooKeeper in Kafka's layout."""
from __future__ import annotations

import json

from confluent_kafka.admin import AclOperation, AdminClient, ResourceType
from kazoo.client import KazooClient

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.acls import ANONYMOUS, every_acl, grant
from tests.support.cluster import Cluster
from tests.support.compat import wait_until
from tests.support.wire import WireClient, batch, produce_body


def start_cluster(tmp_path, zookeeper, overrides: dict[str, str]) -> Cluster:
    return Cluster(tmp_path / "cluster", zookeeper.connect_string, 2, overrides).start()


def test_an_acl_made_on_one_broker_reaches_the_other_and_zookeeper(tmp_path, zookeeper):
    cluster = start_cluster(tmp_path, zookeeper, {"authorizer.class.name": "kcore",
                                                  "super.users": ANONYMOUS})
    try:
        first, second = cluster.brokers[1], cluster.brokers[2]
        acl = grant(AdminClient({"bootstrap.servers": first.bootstrap}), ResourceType.TOPIC,
                    "orders", AclOperation.READ, principal="User:alice")
        other = AdminClient({"bootstrap.servers": second.bootstrap})
        wait_until(lambda: acl in every_acl(other), 15, "the ACL on broker 2")
        zk = KazooClient(hosts=cluster.connect)
        zk.start(timeout=10)
        try:
            data, _ = zk.get("/kafka-acl/Topic/orders")
        finally:
            zk.stop()
        assert json.loads(data) == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
             "host": "*"}]}
        # replication still works: brokers are super users
        cluster.create_topic("replicated", 1, 2)
        cluster.wait_for(lambda: cluster.fully_replicated("replicated", 1, 2), "ISR of 2")
        # and the restarted broker that did not make it reads it back from ZooKeeper
        second.restart()
        described = WireClient(second.port).request(ApiKey.DESCRIBE_ACLS, 3, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
        assert [(r.resource_name, [(a.principal, a.operation) for a in r.acls])
                for r in described.resources] == [("orders", [("User:alice", 3)])]
    finally:
        cluster.kill_all()


def test_a_quota_set_on_one_broker_throttles_on_the_other(tmp_path, zookeeper):
    cluster = start_cluster(tmp_path, zookeeper, {})
    try:
        first = WireClient(cluster.brokers[1].port)
        response = first.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [{
            "entity": [{"entity_type": "client-id", "entity_name": None}],
            "ops": [{"key": "producer_byte_rate", "value": 10000.0, "remove": False}]}],
            "validate_only": False})
        assert response.entries[0].error_code == ErrorCode.NONE
        cluster.create_topic("throttled", 2, 1)
        leader_of = {p: cluster.leader("throttled", p) for p in range(2)}
        partition = next(p for p, leader in leader_of.items() if leader == 2)
        second = WireClient(cluster.brokers[2].port)

        def described() -> bool:
            answer = second.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1,
                                    {"components": [], "strict": False})
            return [(v.key, v.value) for e in answer.entries or [] for v in e.values] == \
                [("producer_byte_rate", 10000.0)]

        wait_until(described, 15, "the quota on broker 2")
        answer = second.request(ApiKey.PRODUCE, 8, produce_body(
            "throttled", partition, bytes(batch([b"x" * 10_000] * 5))))
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        assert answer.throttle_time_ms >= 3000
    finally:
        cluster.kill_all()


def test_user_quotas_share_the_users_znode_with_what_else_is_there(tmp_path, zookeeper):
    """/config/users/<user> also holds SCRAM credentials in Kafka: a quota
    change keeps them."""
    cluster = start_cluster(tmp_path, zookeeper, {})
    zk = KazooClient(hosts=cluster.connect)
    zk.start(timeout=10)
    try:
        credential = "salt=c2FsdA==,stored_key=a2V5,server_key=c2s=,iterations=4096"
        zk.create("/config/users/alice", json.dumps(
            {"version": 1, "config": {"SCRAM-SHA-256": credential}}).encode(), makepath=True)
        client = WireClient(cluster.brokers[1].port)
        response = client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [{
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "ops": [{"key": "consumer_byte_rate", "value": 2048.0, "remove": False}]}],
            "validate_only": False})
        assert response.entries[0].error_code == ErrorCode.NONE
        data, _ = zk.get("/config/users/alice")
        assert json.loads(data)["config"] == {"SCRAM-SHA-256": credential,
                                              "consumer_byte_rate": "2048.0"}
        described = client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1,
                                   {"components": [], "strict": False})
        assert [(v.key, v.value) for e in described.entries for v in e.values] == \
            [("consumer_byte_rate", 2048.0)]
    finally:
        zk.stop()
        cluster.kill_all()

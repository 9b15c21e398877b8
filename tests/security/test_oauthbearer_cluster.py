"""OAUTHBEARER on a 3-broker ZooKeeper cluster: every broker validates
signed JWTs against one JWKS endpoint and the unsecured ones itself;
librdkafka logs in to each (Metadata sends it to every partition leader),
produces with acks=all to a topic replicated three times and reads it back
as User:alice, whom the ACLs allow, on each kind of listener."""
from __future__ import annotations

import json
import time

from confluent_kafka.admin import AclOperation, AdminClient, NewTopic, ResourcePatternType, ResourceType

from tests.support import free_port
from tests.support.acls import every_acl, grant
from tests.support.cluster import Cluster
from tests.support.compat import wait_until
from tests.support.jwt_tokens import jwks, rsa_key
from tests.support.oauth_broker import LISTENERS, JwksServer, OAuthBroker, oauth_settings
from tests.support.security_clients import produce_and_consume


def test_every_broker_of_a_cluster_serves_oauthbearer(tmp_path, zookeeper):
    key = rsa_key("rsa-cluster")
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(key)))
    server = JwksServer(jwks(key)).start()
    cluster = Cluster(tmp_path / "cluster", zookeeper.connect_string, 3, {"offsets.topic.replication.factor": "3"})
    ports: dict[int, dict[str, int]] = {}
    for broker_id, broker in cluster.brokers.items():
        ports[broker_id] = {name: free_port() for name in LISTENERS}
        broker.port = ports[broker_id]["PLAINTEXT"]
        broker.overrides.update(oauth_settings(ports[broker_id], jwks_file, server))
    try:
        cluster.start()
        topics = {listener: f"oauth-{listener.lower()}" for listener in ("SIGNED", "FETCHED", "UNSECURED")}
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        futures = admin.create_topics([NewTopic(topic, 3, 3) for topic in topics.values()])
        # The cluster's wait: 30 s, and the brokers' log tails if it runs out
        # (15 s once ran out on a loaded CI machine, with nothing to read).
        cluster.wait_for(lambda: all(future.done() for future in futures.values()), "the topics are created")
        for future in futures.values():
            future.result()
        acls = {grant(admin, kind, "oauth-", AclOperation.ALL, principal="User:alice",
                      pattern=ResourcePatternType.PREFIXED) for kind in (ResourceType.TOPIC, ResourceType.GROUP)}
        for broker in cluster.brokers.values():  # each learns them from its ZooKeeper watch
            one = AdminClient({"bootstrap.servers": broker.bootstrap})
            wait_until(lambda one=one: acls <= every_acl(one), 15, f"the ACLs on {broker.bootstrap}")
        cluster.wait_for(lambda: all(len(partition.isrs) == 3 for topic in topics.values()
                                     for partition in cluster.metadata(topic).topics[topic].partitions.values()),
                         "replicas in sync")
        tokens = OAuthBroker(cluster.brokers[1], ports[1], key, server)
        for listener, credentials in (
                ("SIGNED", {"oauth_cb": lambda _config: (tokens.token("alice"), time.time() + 3600)}),
                ("FETCHED", {"oauth_cb": lambda _config: (tokens.token("alice"), time.time() + 3600)}),
                ("UNSECURED", {"enable.sasl.oauthbearer.unsecure.jwt": True,
                               "sasl.oauthbearer.config": "principal=alice scope=kafka"})):
            bootstrap = ",".join(f"127.0.0.1:{ports[broker_id][listener]}" for broker_id in ports)
            config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "OAUTHBEARER", "acks": "all", "message.timeout.ms": 20000,
                      **credentials}
            values = produce_and_consume(config, topics[listener], count=30)
            assert sorted(values) == sorted(b"value-%d" % i for i in range(30)), listener
    finally:
        cluster.kill_all()
        server.stop()

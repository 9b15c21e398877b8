"""The registry of a 3-broker cluster (real ZooKeeper, real brokers): one
registry whichever broker is asked. Writes through any broker land on the
primary (the leader of ``_schemas``' partition) and get ids once; reads
through any broker find them at once; a restart of every broker keeps
every id, and so does the loss of the primary."""
from __future__ import annotations

import json

from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from kcore.testing.cluster import Cluster
from tests.support import free_port
from tests.support.registry import call


def schema(name: str, *fields: str) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "cluster",
                       "fields": [{"name": field, "type": "string", "default": ""} for field in fields]})


def registry_cluster(tmp_path, zookeeper) -> tuple[Cluster, dict[int, str]]:
    cluster = Cluster(tmp_path / "brokers", zookeeper.connect_string, 3,
                      {"http.listeners": "", "group.initial.rebalance.delay.ms": "0",
                       "schema.registry.topic.replication.factor": "3"})
    urls = {}
    for broker_id, broker in cluster.brokers.items():
        port = free_port()
        urls[broker_id] = f"http://127.0.0.1:{port}"
        broker.overrides["schema.registry.listeners"] = urls[broker_id]
    return cluster.start(), urls


def test_register_anywhere_read_everywhere_restart_keeps_ids(tmp_path, kcore_zookeeper):
    cluster, urls = registry_cluster(tmp_path, kcore_zookeeper)
    try:
        ids: dict[str, int] = {}
        for round_ in range(2):
            for broker_id, url in urls.items():
                subject = f"s{broker_id}-{round_}-value"
                status, answer = call(url, "POST", f"/subjects/{subject}/versions",
                                      {"schema": schema(f"R{broker_id}x{round_}", "a")})
                assert status == 200, answer
                ids[subject] = answer["id"]
                for reader in urls.values():  # read at once through every broker
                    status, found = call(reader, "GET", f"/schemas/ids/{answer['id']}")
                    assert status == 200 and json.loads(found["schema"])["name"] == f"R{broker_id}x{round_}"
        assert sorted(ids.values()) == list(range(1, 7)), "six schemas, six ids, each given once"
        views = [call(url, "GET", "/subjects")[1] for url in urls.values()]
        assert views[0] == views[1] == views[2] == sorted(ids)
        primary = cluster.wait_leader("_schemas", 0)
        assert primary in urls and len(cluster.partitions("_schemas")) == 1

        for broker in cluster.brokers.values():
            broker.stop()
        for broker in cluster.brokers.values():
            broker.start()
        cluster.wait_for(lambda: len(cluster.metadata().brokers) == 3, "every broker is back")
        for url in urls.values():
            for subject, schema_id in ids.items():
                status, version = call(url, "GET", f"/subjects/{subject}/versions/1")
                assert status == 200 and version["id"] == schema_id
        again = call(urls[2], "POST", "/subjects/s1-0-value/versions", {"schema": schema("R1x0", "a")})
        assert again == (200, {"id": ids["s1-0-value"]})
        new = call(urls[3], "POST", "/subjects/fresh-value/versions", {"schema": schema("Fresh", "a")})
        assert new == (200, {"id": 7})

        old_primary = cluster.wait_leader("_schemas", 0)
        cluster.brokers[old_primary].kill()
        cluster.wait_for(lambda: cluster.leader("_schemas", 0) not in (-1, old_primary),
                         "another broker leads _schemas")
        survivor = next(url for broker_id, url in urls.items() if broker_id != old_primary)
        after = call(survivor, "POST", "/subjects/after-failover-value/versions", {"schema": schema("After", "a")})
        assert after == (200, {"id": 8}), "the new primary continues from the highest id"
        for broker_id, url in urls.items():
            if broker_id != old_primary:
                assert call(url, "GET", "/schemas/ids/8")[0] == 200
                assert call(url, "GET", "/subjects/s1-0-value/versions/1")[1]["id"] == ids["s1-0-value"]
    finally:
        cluster.kill_all()


def test_serializers_with_every_broker_as_registry(tmp_path, kcore_zookeeper):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    cluster, urls = registry_cluster(tmp_path, kcore_zookeeper)
    try:
        writer = SchemaRegistryClient({"url": urls[3]})
        value = {"a": "x"}
        payload = AvroSerializer(writer, schema("Ser", "a"))(value, SerializationContext("t", MessageField.VALUE))
        for url in urls.values():
            reader = SchemaRegistryClient({"url": url})
            assert AvroDeserializer(reader)(payload, SerializationContext("t", MessageField.VALUE)) == value
        every = SchemaRegistryClient({"url": ",".join(urls.values())})
        assert every.register_schema("t-value", Schema(schema("Ser", "a"), "AVRO")) == \
            int.from_bytes(payload[1:5], "big")
    finally:
        cluster.kill_all()

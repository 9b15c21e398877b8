"""Share groups on /metrics and the console's API: after a ShareConsumer
holds some records and releases others, the share-partition's start
offset, records in flight, acquired records, lag and delivery counts are
exported, and /api/share-groups shows the same."""
from __future__ import annotations

import json
import urllib.request

from confluent_kafka import AcknowledgeType
from prometheus_client.parser import text_string_to_metric_families

from tests.support import free_port
from tests.support.share import create_topic, produce, set_group_configs, share_consumer, unique


def _samples(url: str) -> dict[tuple[str, tuple], float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples
            if sample.name.startswith("kafka_sharegroup")}


def test_share_partition_lag_in_flight_and_deliveries_on_metrics_and_the_console(broker_factory):
    http_port = free_port()
    broker = broker_factory({"http.listeners": f"http://127.0.0.1:{http_port}"})
    url = f"http://127.0.0.1:{http_port}"
    topic, group = unique("observed"), unique("g")
    create_topic(broker.bootstrap_servers, topic)
    set_group_configs([broker.bootstrap_servers], group, {"share.auto.offset.reset": "earliest"})
    produce(broker.bootstrap_servers, topic, 20)
    consumer = share_consumer(broker.bootstrap_servers, group, topic,
                              **{"share.acknowledgement.mode": "explicit", "max.poll.records": "10"})
    held = []
    for _ in range(40):
        held = [m for m in consumer.poll(0.5) if not m.error()]
        if held:
            break
    assert held and held[0].offset() == 0
    # Accept the first two, release the rest: 2 done, the others available again.
    for message in held:
        consumer.acknowledge(message, AcknowledgeType.ACCEPT if message.offset() < 2 else AcknowledgeType.RELEASE)
    consumer.commit_sync()
    labels = (("partition", "0"), ("sharegroup", group), ("topic", topic))
    samples = _samples(url)
    assert samples[("kafka_sharegroup_start_offset", labels)] == 2
    assert samples[("kafka_sharegroup_lag", labels)] == 18
    assert samples[("kafka_sharegroup_records_acquired", labels)] == 0
    assert samples[("kafka_sharegroup_records_in_flight", labels)] == len(held) - 2
    assert samples[("kafka_sharegroup_deliveries_total", labels)] == len(held)
    assert samples[("kafka_sharegroup_members", (("sharegroup", group),))] == 1
    shown = json.loads(urllib.request.urlopen(f"{url}/api/share-groups", timeout=10).read())
    mine = next(g for g in shown["groups"] if g["group_id"] == group)
    assert mine["state"] == "Stable" and mine["members"] == 1 and mine["lag"] == 18
    assert mine["partitions"][0]["start_offset"] == 2 and mine["in_flight"] == len(held) - 2
    consumer.close()

"""The schema registry on a node of two broker processes (num.processes=2):
one registry for the node, whichever process answers its listener, and
validation on produce in the process that leads each partition, with the
ids the other process's registry allocated."""
from __future__ import annotations

import json
import time

from confluent_kafka.admin import NewTopic
from confluent_kafka.error import KafkaError
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.schema_registry.test_validation import produce_batch
from tests.support import BrokerProcess, free_port
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.registry import RegistryBroker

SCHEMA = json.dumps({"type": "record", "name": "Reading", "namespace": "processes",
                     "fields": [{"name": "value", "type": "long"}]})
PARTITIONS = 4


def test_one_registry_and_validation_in_every_process_of_a_node(tmp_path):
    port = free_port()
    node = BrokerProcess(tmp_path / "node", {"num.processes": "2", "http.listeners": "",
                                             "schema.registry.listeners": f"http://127.0.0.1:{port}"}).start()
    try:
        registry = RegistryBroker(node, f"http://127.0.0.1:{port}")
        admin = admin_client(node.bootstrap)
        admin.create_topics([NewTopic("readings", PARTITIONS, 1,
                                      config={"confluent.value.schema.validation": "true"})]
                            )["readings"].result(ADMIN_TIMEOUT_S)
        leaders = {p.leader for p in admin.list_topics("readings", timeout=10)
                   .topics["readings"].partitions.values()}
        assert leaders == {0, 1}, "both processes lead partitions of the topic"

        schema_id = registry.client().register_schema("readings-value", Schema(SCHEMA, "AVRO"))
        # Fresh clients, each its own connections: every one sees the same id.
        for _ in range(4):
            assert registry.client().get_schema(schema_id).schema_str is not None
            assert registry.client().get_latest_version("readings-value").schema_id == schema_id

        serialize = AvroSerializer(registry.client(), SCHEMA)
        context = SerializationContext("readings", MessageField.VALUE)
        values = [serialize({"value": i}, context) for i in range(5)]
        for partition in range(PARTITIONS):
            # The process that does not serve the listener may meet the id
            # before it replayed it: it fetches _schemas at once, and the
            # resend is accepted (docs/schema-registry.md).
            good = {}
            for _attempt in range(5):
                good = produce_batch(node.bootstrap, "readings", values, partition=partition)
                if not any(good.values()):
                    break
                time.sleep(0.5)
            assert not any(good.values()), f"partition {partition}: {good}"
            bad = produce_batch(node.bootstrap, "readings", [b"no schema id"], partition=partition)
            assert bad[0] is not None and bad[0].code() == KafkaError.INVALID_RECORD, f"partition {partition}"
    finally:
        node.kill()

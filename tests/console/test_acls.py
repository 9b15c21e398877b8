"""The console behind the ACLs: with an authorizer on, its calls are what
an unauthenticated Kafka client (User:ANONYMOUS) may do, checked as Kafka
checks the requests that do the same. ACLs are made with confluent-kafka."""
from __future__ import annotations

from confluent_kafka.admin import AclOperation, ResourceType

from tests.support import free_port
from tests.support.acls import admin_for, grant, secured_broker
from tests.support.console import Console

VISIBLE, HIDDEN = "visible", "hidden"


def test_console_calls_are_authorized_as_anonymous_from_the_caller(broker_factory):
    http_port = free_port()
    broker = secured_broker(broker_factory, [VISIBLE, HIDDEN],
                            **{"http.listeners": f"http://127.0.0.1:{http_port}"})
    console = Console(broker, f"http://127.0.0.1:{http_port}", VISIBLE, "", "")
    admin = admin_for(broker)

    assert console.get("/api/topics")["topics"] == []  # nothing describable yet
    status, answer = console.call("GET", f"/api/topics/{VISIBLE}")
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, answer = console.call("GET", f"/api/topics/{VISIBLE}/partitions/0/messages?offset=0")
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")

    grant(admin, ResourceType.TOPIC, VISIBLE, AclOperation.READ)  # READ implies DESCRIBE
    assert [t["name"] for t in console.get("/api/topics")["topics"]] == [VISIBLE]
    assert console.get(f"/api/topics/{VISIBLE}")["name"] == VISIBLE
    assert console.get(f"/api/topics/{VISIBLE}/partitions/0/messages?offset=0")["records"] == []
    status, answer = console.call("PUT", f"/api/topics/{VISIBLE}/configs",
                                  {"set": {"retention.ms": "60000"}})
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, answer = console.call("DELETE", f"/api/topics/{HIDDEN}")
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, answer = console.call("POST", "/api/topics", {"name": "created", "partitions": 1})
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, answer = console.call("GET", "/api/groups/billing")
    assert (status, answer["error"]) == (403, "GROUP_AUTHORIZATION_FAILED")

    status, answer = console.call("POST", f"/api/topics/{VISIBLE}/delete-records", {"offset": 0})
    assert (status, answer["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")

    grant(admin, ResourceType.TOPIC, VISIBLE, AclOperation.DELETE)
    status, answer = console.call("POST", f"/api/topics/{VISIBLE}/delete-records", {"offset": 0})
    assert (status, answer["partitions"]) == (200, [{"partition": 0, "low_watermark": 0, "error": None}])
    grant(admin, ResourceType.TOPIC, VISIBLE, AclOperation.ALTER_CONFIGS)
    grant(admin, ResourceType.TOPIC, "created", AclOperation.CREATE)
    status, _ = console.call("PUT", f"/api/topics/{VISIBLE}/configs", {"set": {"retention.ms": "60000"}})
    assert status == 200
    status, answer = console.call("POST", "/api/topics", {"name": "created", "partitions": 1})
    assert status == 200, answer
    assert broker.process.poll() is None

"""The console's schema pages against a broker serving both: subjects and
versions registered through the registry's REST API show in the JSON
endpoints and in a real browser (Chromium through Playwright), with the
diff between two versions and the Schema column of the topics page."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AclOperation, NewTopic, ResourceType
from playwright.sync_api import expect

from tests.console.conftest import browser, page  # noqa: F401 (fixtures)
from tests.support import BrokerProcess, free_port
from tests.support.acls import admin_for, grant, secured_broker
from tests.support.confluent import ADMIN_TIMEOUT_S, admin_client
from tests.support.console import screenshot
from tests.support.registry import call

TOPIC = "payments"
V1 = {"type": "record", "name": "Payment", "fields": [{"name": "amount", "type": "long"}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "currency", "type": "string", "default": "EUR"}]}
expect.set_options(timeout=10_000)


@dataclass
class Both:
    broker: BrokerProcess
    url: str
    registry_url: str
    ids: list[int]

    def get(self, path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    http_port, registry_port = free_port(), free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("schema-console") / "data",
                           {"http.listeners": f"http://127.0.0.1:{http_port}",
                            "schema.registry.listeners": f"http://127.0.0.1:{registry_port}"}).start()
    try:
        registry_url = f"http://127.0.0.1:{registry_port}"
        admin = admin_client(broker.bootstrap)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(ADMIN_TIMEOUT_S)
        ids = []
        for schema in (V1, V2):
            status, answer = call(registry_url, "POST", f"/subjects/{TOPIC}-value/versions",
                                  {"schema": json.dumps(schema)})
            assert status == 200, answer
            ids.append(answer["id"])
        yield Both(broker, f"http://127.0.0.1:{http_port}", registry_url, ids)
    finally:
        broker.kill()


def test_the_endpoints_show_subjects_versions_and_their_diff(console):
    status, listed = console.get("/api/schemas")
    assert status == 200 and listed["compatibility"] == "BACKWARD"
    assert listed["subjects"] == [{"subject": f"{TOPIC}-value", "versions": [1, 2], "compatibility": "BACKWARD",
                                   "latest": {"version": 2, "id": console.ids[1], "type": "AVRO", "deleted": False}}]
    status, subject = console.get(f"/api/schemas/{TOPIC}-value")
    assert status == 200 and [v["id"] for v in subject["versions"]] == console.ids
    assert json.loads(subject["versions"][1]["schema"]) == V2
    status, diff = console.get(f"/api/schemas/{TOPIC}-value/diff")
    assert status == 200 and (diff["from"], diff["to"]) == (1, 2)
    added = [line for line in diff["diff"] if line.startswith("+") and not line.startswith("+++")]
    assert any('"currency"' in line for line in added)
    assert not [line for line in diff["diff"] if line.startswith("-") and not line.startswith("---")]
    topics = {t["name"]: t for t in console.get("/api/topics")[1]["topics"]}
    assert topics[TOPIC]["schemas"] == {"key": None, "value": {"subject": f"{TOPIC}-value", "version": 2,
                                                               "id": console.ids[1]}}


def test_unknown_subjects_and_versions_are_404(console):
    assert console.get("/api/schemas/nothing-value") == (404, {
        "error": "SUBJECT_NOT_FOUND", "message": "subject 'nothing-value' does not exist"})
    status, answer = console.get(f"/api/schemas/{TOPIC}-value/diff?from=1&to=9")
    assert status == 404 and answer["error"] == "VERSION_NOT_FOUND"
    assert console.get(f"/api/schemas/{TOPIC}-value/diff?from=x")[0] == 400


def test_the_pages_show_subjects_versions_diff_and_the_topics_schema(page, console):  # noqa: F811
    page.goto(console.url + "/#/topics")
    link = page.locator(f"#topics tr[data-topic='{TOPIC}'] a[data-schema='value']")
    expect(link).to_have_text(f"value v2 (id {console.ids[1]})")
    link.click()
    expect(page.locator("#schema-diff .added").filter(has_text='"currency"')).to_have_count(1)
    expect(page.locator("#schema-diff .removed")).to_have_count(1)  # the "--- version 1" header only
    expect(page.locator("details[data-version='2'] pre")).to_contain_text('"currency"')
    screenshot(page, "schema-subject")
    page.goto(console.url + "/#/schemas")
    row = page.locator(f"#subjects tr[data-subject='{TOPIC}-value']")
    expect(row.locator("td").nth(2)).to_have_text("1, 2")
    expect(row.locator("td").nth(4)).to_have_text(str(console.ids[1]))


def test_with_an_authorizer_subjects_show_to_who_may_describe_them(broker_factory):
    http_port, registry_port = free_port(), free_port()
    broker = secured_broker(broker_factory, ["shown", "unseen"],
                            **{"http.listeners": f"http://127.0.0.1:{http_port}",
                               "schema.registry.listeners": f"http://127.0.0.1:{registry_port}"})
    registry_url = f"http://127.0.0.1:{registry_port}"
    console = Both(broker, f"http://127.0.0.1:{http_port}", registry_url, [])
    admin = admin_for(broker)
    for topic in ("shown", "unseen"):
        grant(admin, ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    writes = {"acls": [{"subject": f"{topic}-value", "principal": "User:ANONYMOUS", "operation": "WRITE"}
                       for topic in ("shown", "unseen")]}
    assert call(registry_url, "POST", "/acls", writes)[0] == 200
    for topic in ("shown", "unseen"):
        assert call(registry_url, "POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(V1)})[0] == 200
    assert call(registry_url, "DELETE", "/acls", {"acls": writes["acls"][1:]})[0] == 200

    assert [s["subject"] for s in console.get("/api/schemas")[1]["subjects"]] == ["shown-value"]
    status, answer = console.get("/api/schemas/unseen-value")
    assert (status, answer["error"]) == (403, "SUBJECT_AUTHORIZATION_FAILED")
    assert console.get("/api/schemas/unseen-value/diff")[0] == 403
    topics = {t["name"]: t["schemas"]["value"] for t in console.get("/api/topics")[1]["topics"]}
    assert topics["shown"]["subject"] == "shown-value" and topics["unseen"] is None

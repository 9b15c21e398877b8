"""Confluent Schema Registry's REST API as the built-in registry answers
it over HTTP: the shapes of its answers and, for bad input, Confluent's
status and ``error_code`` (``rest/exceptions/Errors.java``)."""
from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

RECORD = {"type": "record", "name": "Order", "namespace": "shop",
          "fields": [{"name": "id", "type": "string"}]}
WITH_NOTE = {**RECORD, "fields": RECORD["fields"] + [{"name": "note", "type": ["null", "string"],
                                                       "default": None}]}
WITH_REQUIRED = {**RECORD, "fields": RECORD["fields"] + [{"name": "qty", "type": "int"}]}


def register(registry, subject, schema, **extra):
    return registry.call("POST", f"/subjects/{subject}/versions", {"schema": json.dumps(schema), **extra})


def test_register_answers_an_id_and_the_version_reads_back(registry, subject):
    status, answer = register(registry, subject, RECORD)
    assert status == 200 and isinstance(answer["id"], int) and set(answer) == {"id"}
    status, version = registry.call("GET", f"/subjects/{subject}/versions/1")
    assert status == 200
    assert version == {"subject": subject, "version": 1, "id": answer["id"],
                       "schema": json.dumps(RECORD, separators=(",", ":"))}
    assert registry.call("GET", f"/subjects/{subject}/versions/latest")[1] == version
    assert registry.call("GET", f"/schemas/ids/{answer['id']}")[1] == {"schema": version["schema"]}
    assert registry.call("GET", f"/schemas/ids/{answer['id']}/schema")[1] == RECORD
    assert registry.call("GET", f"/subjects/{subject}/versions/1/schema")[1] == RECORD
    assert subject in registry.call("GET", "/subjects")[1]
    assert {"subject": subject, "version": 1} in registry.call("GET", f"/schemas/ids/{answer['id']}/versions")[1]


def test_the_same_schema_registers_once_whatever_its_formatting(registry, subject):
    first = register(registry, subject, RECORD)[1]["id"]
    spaced = registry.call("POST", f"/subjects/{subject}/versions", {"schema": json.dumps(RECORD, indent=4)})
    assert spaced == (200, {"id": first})
    assert registry.call("GET", f"/subjects/{subject}/versions")[1] == [1]
    other = f"other-{subject}"
    assert register(registry, other, RECORD)[1]["id"] == first
    assert {subject, other} <= set(registry.call("GET", f"/schemas/ids/{first}/subjects")[1])


def test_a_new_schema_gets_a_new_id_and_the_next_version(registry, subject):
    first = register(registry, subject, RECORD)[1]["id"]
    second = register(registry, subject, WITH_NOTE)[1]["id"]
    assert second > first
    assert registry.call("GET", f"/subjects/{subject}/versions")[1] == [1, 2]


def test_an_incompatible_schema_is_40901_with_the_reasons(registry, subject):
    register(registry, subject, RECORD)
    status, answer = register(registry, subject, WITH_REQUIRED)
    assert status == 409 and answer["error_code"] == 40901
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in answer["message"] and "qty" in answer["message"]
    status, verdict = registry.call("POST", f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                                    {"schema": json.dumps(WITH_REQUIRED)})
    assert status == 200 and verdict["is_compatible"] is False and verdict["messages"]
    assert registry.call("POST", f"/compatibility/subjects/{subject}/versions/latest",
                         {"schema": json.dumps(WITH_NOTE)}) == (200, {"is_compatible": True})


def test_compatibility_levels_per_subject_and_global(registry, subject):
    register(registry, subject, RECORD)
    assert registry.call("GET", f"/config/{subject}")[1]["error_code"] == 40408
    assert registry.call("GET", f"/config/{subject}?defaultToGlobal=true") == (200, {"compatibilityLevel":
                                                                                     "BACKWARD"})
    assert registry.call("PUT", f"/config/{subject}", {"compatibility": "none"}) == (200, {"compatibility": "NONE"})
    assert register(registry, subject, WITH_REQUIRED)[0] == 200
    assert registry.call("GET", f"/config/{subject}") == (200, {"compatibilityLevel": "NONE"})
    assert registry.call("DELETE", f"/config/{subject}") == (200, {"compatibilityLevel": "NONE"})
    status, answer = registry.call("PUT", f"/config/{subject}", {"compatibility": "SIDEWAYS"})
    assert status == 422 and answer["error_code"] == 42203


def test_transitive_level_checks_every_version(registry, subject):
    registry.call("PUT", f"/config/{subject}", {"compatibility": "BACKWARD_TRANSITIVE"})
    register(registry, subject, {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    # v2 drops a: backward with v1. v3 adds a back without a default: backward
    # with v2 (the latest) but not with v1's data? v1 wrote a, so it is; use a
    # type v1 wrote otherwise.
    assert register(registry, subject, {"type": "record", "name": "R", "fields": []})[0] == 200
    status, answer = register(registry, subject, {"type": "record", "name": "R",
                                                  "fields": [{"name": "a", "type": "string", "default": ""}]})
    assert status == 409 and "{oldSchemaVersion: 1}" in answer["message"]


def test_lookup_finds_the_version_holding_a_schema(registry, subject):
    schema_id = register(registry, subject, RECORD)[1]["id"]
    status, found = registry.call("POST", f"/subjects/{subject}", {"schema": json.dumps(RECORD)})
    assert status == 200 and found["id"] == schema_id and found["version"] == 1
    status, missing = registry.call("POST", f"/subjects/{subject}", {"schema": json.dumps(WITH_NOTE)})
    assert (status, missing["error_code"]) == (404, 40403)


def test_soft_then_permanent_delete(registry, subject):
    register(registry, subject, RECORD)
    register(registry, subject, WITH_NOTE)
    status, answer = registry.call("DELETE", f"/subjects/{subject}/versions/1?permanent=true")
    assert (status, answer["error_code"]) == (404, 40407)
    assert registry.call("DELETE", f"/subjects/{subject}/versions/1") == (200, 1)
    assert registry.call("GET", f"/subjects/{subject}/versions")[1] == [2]
    assert registry.call("GET", f"/subjects/{subject}/versions?deleted=true")[1] == [1, 2]
    assert registry.call("GET", f"/subjects/{subject}/versions/1")[1]["error_code"] == 40402
    assert registry.call("GET", f"/subjects/{subject}/versions/1?deleted=true")[0] == 200
    status, answer = registry.call("DELETE", f"/subjects/{subject}/versions/1")
    assert (status, answer["error_code"]) == (404, 40406)
    assert registry.call("DELETE", f"/subjects/{subject}/versions/1?permanent=true") == (200, 1)
    assert registry.call("DELETE", f"/subjects/{subject}") == (200, [2])
    assert registry.call("GET", f"/subjects/{subject}/versions")[1]["error_code"] == 40401
    status, answer = registry.call("DELETE", f"/subjects/{subject}")
    assert (status, answer["error_code"]) == (404, 40404)
    assert registry.call("DELETE", f"/subjects/{subject}?permanent=true") == (200, [2])
    assert subject not in registry.call("GET", "/subjects?deleted=true")[1]


def test_readonly_mode_refuses_writes(registry, subject):
    register(registry, subject, RECORD)
    assert registry.call("PUT", f"/mode/{subject}", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, answer = register(registry, subject, WITH_NOTE)
    assert (status, answer["error_code"]) == (422, 42205)
    assert registry.call("GET", f"/mode/{subject}") == (200, {"mode": "READONLY"})
    assert registry.call("DELETE", f"/mode/{subject}") == (200, {"mode": "READONLY"})
    assert register(registry, subject, WITH_NOTE)[0] == 200
    status, answer = registry.call("PUT", "/mode", {"mode": "IMPORT"})
    assert (status, answer["error_code"]) == (422, 42205)
    assert registry.call("GET", "/mode") == (200, {"mode": "READWRITE"})


def test_references_resolve_by_subject_and_version(registry, subject):
    address = {"type": "record", "name": "Address", "namespace": "shop",
               "fields": [{"name": "city", "type": "string"}]}
    register(registry, f"address-{subject}", address)
    customer = {"type": "record", "name": "Customer", "namespace": "shop",
                "fields": [{"name": "home", "type": "shop.Address"}]}
    reference = [{"name": "shop.Address", "subject": f"address-{subject}", "version": 1}]
    status, answer = register(registry, subject, customer, references=reference)
    assert status == 200
    version = registry.call("GET", f"/subjects/{subject}/versions/1")[1]
    assert version["references"] == reference and '"type":"shop.Address"' in version["schema"]
    assert registry.call("GET", f"/subjects/address-{subject}/versions/1/referencedby")[1] == [answer["id"]]
    registry.call("DELETE", f"/subjects/address-{subject}/versions/1")
    status, refused = registry.call("DELETE", f"/subjects/address-{subject}/versions/1?permanent=true")
    assert (status, refused["error_code"]) == (422, 42206)
    status, missing = register(registry, f"x-{subject}", customer)
    assert (status, missing["error_code"]) == (422, 42201)


def test_types_and_contexts(registry):
    assert registry.call("GET", "/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
    assert registry.call("GET", "/contexts") == (200, ["."])


@pytest.mark.parametrize("method,path,status,code", [
    ("GET", "/subjects/no-such-subject/versions", 404, 40401),
    ("GET", "/subjects/no-such-subject/versions/1", 404, 40401),
    ("GET", "/schemas/ids/987654321", 404, 40403),
    ("GET", "/schemas/ids/not-a-number", 404, 40403),
    ("GET", "/nowhere", 404, 404),
    ("PATCH", "/subjects", 405, 405),
])
def test_unknown_things_get_confluents_codes(registry, method, path, status, code):
    answer = registry.call(method, path)
    assert answer[0] == status and answer[1]["error_code"] == code


def test_unknown_version_and_invalid_version(registry, subject):
    register(registry, subject, RECORD)
    assert registry.call("GET", f"/subjects/{subject}/versions/7")[1]["error_code"] == 40402
    status, answer = registry.call("GET", f"/subjects/{subject}/versions/zero")
    assert (status, answer["error_code"]) == (422, 42202)
    assert registry.call("GET", f"/subjects/{subject}/versions/0")[1]["error_code"] == 42202


@pytest.mark.parametrize("body", [{"schema": "{not json"}, {"schema": '{"type":"record"}'}, {"schema": ""},
                                  {"schema": '"string"', "schemaType": "XML"}, {"nothing": 1}])
def test_invalid_schemas_are_42201(registry, subject, body):
    status, answer = registry.call("POST", f"/subjects/{subject}/versions", body)
    assert (status, answer["error_code"]) == (422, 42201)


def test_malformed_json_body_is_400(registry, subject):
    status, answer = registry.call("POST", f"/subjects/{subject}/versions", raw=b'{"schema": ')
    assert status == 400 and answer["error_code"] == 400


def test_a_body_of_another_type_is_415(registry, subject):
    status, answer = registry.call("POST", f"/subjects/{subject}/versions", raw=b"schema=x",
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415 and answer["error_code"] == 415


def test_an_oversized_body_is_refused_unread(registry, subject):
    host, port = urlsplit(registry.url).hostname, urlsplit(registry.url).port
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(f"POST /subjects/{subject}/versions HTTP/1.1\r\nHost: {host}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {64 << 20}\r\n\r\n".encode())
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b'"error_code":413' in answer


def test_keep_alive_serves_many_requests_on_one_connection(registry):
    host, port = urlsplit(registry.url).hostname, urlsplit(registry.url).port
    with socket.create_connection((host, port), timeout=10) as sock:
        reader = sock.makefile("rb")
        for _ in range(3):
            sock.sendall(f"GET /schemas/types HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            status = reader.readline()
            headers = {}
            while (line := reader.readline().strip()):
                name, _, value = line.decode().partition(":")
                headers[name.lower()] = value.strip()
            body = reader.read(int(headers["content-length"]))
            assert status.startswith(b"HTTP/1.1 200") and json.loads(body) == ["JSON", "PROTOBUF", "AVRO"]
            assert headers["content-type"] == "application/vnd.schemaregistry.v1+json"


def test_a_foreign_host_header_is_refused(registry):
    status, _ = registry.call("GET", "/subjects", headers={"Host": "attacker.example"})
    assert status == 403

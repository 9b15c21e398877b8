"""Who may use the registry of a broker with SASL users and an authorizer:
HTTP basic auth against its PLAIN (JAAS) and SCRAM (`kcore users`) users,
401 without; DESCRIBE and WRITE on the ``Subject`` resource, 403 with
Confluent's 40301 without; the Subject ACLs managed through ``/acls``
(kcore's own routes), and confluent-kafka's client with
``basic.auth.user.info``."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.support import free_port
from tests.support.cli import kcore_cli
from tests.support.registry import call
from tests.support.secure_broker import SCRAM_PASSWORD, SCRAM_USER, USERS, make_pki, start_secure_broker

SCHEMA = json.dumps({"type": "record", "name": "Secured", "fields": [{"name": "a", "type": "string"}]})


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


ADMIN = basic("admin", USERS["admin"])
ALICE = basic("alice", USERS["alice"])
SCRAM = basic(SCRAM_USER, SCRAM_PASSWORD)


@dataclass
class Secured:
    url: str
    sasl_plaintext: str


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    port = free_port()
    broker = start_secure_broker(tmp_path_factory.mktemp("registry-auth") / "data",
                                 make_pki(tmp_path_factory.mktemp("pki")), {
                                     "schema.registry.listeners": f"http://127.0.0.1:{port}",
                                     "authorizer.class.name": "kcore", "super.users": "User:admin"})
    added = kcore_cli("users", "add", SCRAM_USER, "--password", SCRAM_PASSWORD,
                      "--bootstrap-server", broker.address("PLAINTEXT"))
    assert added.returncode == 0, added.stderr
    yield Secured(f"http://127.0.0.1:{port}", broker.address("SASL_PLAINTEXT"))
    broker.process.kill()


def test_no_login_is_401_with_a_challenge(secured):
    status, answer = call(secured.url, "GET", "/subjects")
    assert status == 401 and answer["error_code"] == 401
    assert call(secured.url, "GET", "/subjects", headers=basic("alice", "wrong"))[0] == 401
    assert call(secured.url, "GET", "/subjects", headers=basic("nobody", "x"))[0] == 401
    assert call(secured.url, "GET", "/subjects", headers={"Authorization": "Basic !!!"})[0] == 401


def test_plain_and_scram_users_log_in(secured):
    assert call(secured.url, "GET", "/subjects", headers=ADMIN)[0] == 200
    assert call(secured.url, "GET", "/subjects", headers=ALICE)[0] == 200
    assert call(secured.url, "GET", "/subjects", headers=SCRAM)[0] == 200


def test_subject_acls_decide_reads_and_writes(secured):
    status, refused = call(secured.url, "POST", "/subjects/orders-value/versions", {"schema": SCHEMA}, headers=ALICE)
    assert status == 403 and refused["error_code"] == 40301 and "Subject:orders-value" in refused["message"]
    status, added = call(secured.url, "POST", "/acls", {"acls": [
        {"subject": "orders-", "patternType": "PREFIXED", "principal": "User:alice", "operation": "WRITE"}]},
        headers=ADMIN)
    assert status == 200 and added[0]["operation"] == "WRITE"
    assert call(secured.url, "POST", "/acls", {"acls": [{"subject": "x", "principal": "User:alice",
                                                     "operation": "WRITE"}]}, headers=ALICE)[0] == 403
    status, registered = call(secured.url, "POST", "/subjects/orders-value/versions", {"schema": SCHEMA},
                              headers=ALICE)
    assert status == 200
    schema_id = registered["id"]
    # WRITE implies DESCRIBE, as in Kafka; the SCRAM user has neither.
    assert call(secured.url, "GET", f"/schemas/ids/{schema_id}", headers=ALICE)[0] == 200
    assert call(secured.url, "GET", f"/schemas/ids/{schema_id}", headers=SCRAM)[1]["error_code"] == 40301
    assert call(secured.url, "GET", "/subjects", headers=SCRAM) == (200, [])
    assert "orders-value" in call(secured.url, "GET", "/subjects", headers=ALICE)[1]
    call(secured.url, "POST", "/subjects/billing-value/versions", {"schema": SCHEMA}, headers=ADMIN)
    assert call(secured.url, "GET", "/subjects", headers=ALICE)[1] == ["orders-value"]
    assert call(secured.url, "PUT", "/config", {"compatibility": "NONE"}, headers=ALICE)[1]["error_code"] == 40301
    listed = call(secured.url, "GET", "/acls?subject=orders-", headers=ADMIN)[1]
    assert listed == [{"subject": "orders-", "patternType": "PREFIXED", "principal": "User:alice", "host": "*",
                       "operation": "WRITE", "permission": "ALLOW"}]
    assert call(secured.url, "DELETE", "/acls", {"acls": listed}, headers=ADMIN)[0] == 200
    assert call(secured.url, "GET", f"/schemas/ids/{schema_id}", headers=ALICE)[1]["error_code"] == 40301


def test_bad_acls_are_400(secured):
    status, answer = call(secured.url, "POST", "/acls", {"acls": [{"subject": "s", "principal": "alice",
                                                               "operation": "WRITE"}]}, headers=ADMIN)
    assert status == 400 and answer["error_code"] == 400
    status, answer = call(secured.url, "POST", "/acls", {"acls": [{"subject": "s", "principal": "User:a",
                                                               "operation": "CLUSTER_ACTION"}]}, headers=ADMIN)
    assert status == 400


def test_subject_acls_stay_off_kafkas_describe_acls(secured):
    call(secured.url, "POST", "/acls", {"acls": [{"subject": "hidden", "principal": "User:alice",
                                              "operation": "DESCRIBE"}]}, headers=ADMIN)
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )
    admin = AdminClient({"bootstrap.servers": secured.sasl_plaintext, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": USERS["admin"]})
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    found = admin.describe_acls(everything).result(timeout=30)
    assert all(binding.name != "hidden" for binding in found)


def test_confluent_client_with_basic_auth(secured):
    admin = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": f"admin:{USERS['admin']}"})
    schema_id = admin.register_schema("client-value", Schema(SCHEMA, "AVRO"))
    assert admin.get_schema(schema_id).schema_str
    anonymous = SchemaRegistryClient({"url": secured.url})
    with pytest.raises(SchemaRegistryError) as caught:
        anonymous.get_subjects()
    assert caught.value.http_status_code == 401


def test_kcore_schemas_logs_in_and_manages_subject_acls(secured):
    def schemas(*argv: str, user: str = "admin"):
        return kcore_cli("schemas", *argv[:2], "--registry-url", secured.url, "--user", user,
                         "--password", USERS[user], *argv[2:])

    assert kcore_cli("schemas", "list", "--registry-url", secured.url).returncode == 1
    added = schemas("acls", "add", "--subject", "cli-", "--pattern-type", "PREFIXED",
                    "--principal", "User:alice", "--operation", "DESCRIBE")
    assert added.returncode == 0 and "Added 1 ACL(s)" in added.stdout
    listed = schemas("acls", "list", "--subject", "cli-")
    assert listed.stdout.splitlines()[1].split() == ["cli-", "PREFIXED", "User:alice", "*", "DESCRIBE", "ALLOW"]
    refused = schemas("acls", "add", "--subject", "x", "--principal", "User:alice", "--operation", "WRITE",
                      user="alice")
    assert refused.returncode == 1 and "error_code 40301" in refused.stderr
    removed = schemas("acls", "remove", "--subject", "cli-", "--pattern-type", "PREFIXED",
                      "--principal", "User:alice", "--operation", "DESCRIBE")
    assert removed.returncode == 0 and "Removed 1 ACL(s)" in removed.stdout
    assert schemas("acls", "list", "--subject", "cli-").stdout.splitlines()[1:] == []

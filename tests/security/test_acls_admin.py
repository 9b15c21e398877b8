"""ACL administration: `kcore acls` round trips, ACLs across restarts,
CreateAcls / DeleteAcls with bad input, and the checks of APIs that are
not about topics (inter-broker requests, idempotent producers, configs)."""
from __future__ import annotations

import subprocess

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclOperation,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourcePatternType,
    ResourceType,
)

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security import acl as model
from tests.support.acls import (
    ADMIN_TIMEOUT_S,
    admin_for,
    binding,
    every_acl,
    grant,
    produce_one,
    secured_broker,
)
from tests.support.cli import kcore_cli
from tests.support.wire import WireClient

TOPIC = ResourceType.TOPIC
Op = AclOperation


def kcore_acls(broker, *args: str) -> subprocess.CompletedProcess:
    return kcore_cli("acls", *args, "--bootstrap-server", broker.bootstrap)


def test_kcore_acls_add_list_remove_round_trip(broker_factory):
    broker = secured_broker(broker_factory, ["ledger"])
    added = kcore_acls(broker, "add", "--allow-principal", "User:ANONYMOUS", "--operation", "Write",
                       "--operation", "Describe", "--topic", "ledger")
    assert added.returncode == 0, added.stderr
    assert produce_one(broker.bootstrap, "ledger") is None
    listed = kcore_acls(broker, "list", "--topic", "ledger")
    assert listed.returncode == 0
    assert "resourceType=TOPIC, name=ledger, patternType=LITERAL" in listed.stdout
    assert "operation=WRITE, permissionType=ALLOW" in listed.stdout
    assert "operation=DESCRIBE" in listed.stdout
    prefixed = kcore_acls(broker, "add", "--deny-principal", "User:mallory", "--operation", "All",
                          "--topic", "led", "--resource-pattern-type", "prefixed")
    assert prefixed.returncode == 0
    matching = kcore_acls(broker, "list", "--topic", "ledger", "--resource-pattern-type", "match")
    assert "User:mallory" in matching.stdout and "name=ledger," in matching.stdout
    removed = kcore_acls(broker, "remove", "--allow-principal", "User:ANONYMOUS", "--operation",
                         "Write", "--topic", "ledger")
    assert removed.returncode == 0 and "Removed 1 ACLs" in removed.stdout
    error = produce_one(broker.bootstrap, "ledger")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    everything = kcore_acls(broker, "list")
    assert "operation=WRITE, permissionType=ALLOW" not in everything.stdout
    assert "User:mallory" in everything.stdout


def test_kcore_acls_refuses_incomplete_commands(broker_factory):
    broker = secured_broker(broker_factory, [])
    no_operation = kcore_acls(broker, "add", "--allow-principal", "User:a", "--topic", "t")
    assert no_operation.returncode == 1 and "--operation" in no_operation.stderr
    everything = kcore_acls(broker, "remove")
    assert everything.returncode == 1 and "resource" in everything.stderr
    bad_op = kcore_acls(broker, "add", "--allow-principal", "User:a", "--operation", "Fly",
                        "--topic", "t")
    assert bad_op.returncode == 2 and "unknown operation" in bad_op.stderr


def test_acls_survive_a_restart(broker_factory):
    broker = secured_broker(broker_factory, ["kept"])
    admin = admin_for(broker)
    acl = grant(admin, TOPIC, "kept", Op.WRITE)
    broker.restart()
    assert acl in every_acl(admin_for(broker))
    assert produce_one(broker.bootstrap, "kept") is None
    broker.restart(clean=False)  # kill -9: the metadata file was written before the answer
    assert produce_one(broker.bootstrap, "kept") is None


def _creation(**fields) -> dict:
    base = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
            "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}
    return {**base, **fields}


def test_create_acls_answers_each_bad_creation_with_invalid_request(broker_factory):
    broker = secured_broker(broker_factory, [])
    client = WireClient(broker.port)
    creations = [
        _creation(),                               # valid
        _creation(resource_type=99),               # unknown resource type
        _creation(resource_type=1),                # ANY is a filter, not a resource
        _creation(operation=0),                    # UNKNOWN operation
        _creation(operation=77),                   # no such operation
        _creation(resource_pattern_type=2),        # MATCH is a filter
        _creation(permission_type=9),              # no such permission
        _creation(principal="alice"),              # not Type:name
        _creation(resource_type=4, resource_name="other-cluster"),
    ]
    response = client.request(ApiKey.CREATE_ACLS, 3, {"creations": creations})
    codes = [result.error_code for result in response.results]
    assert codes == [ErrorCode.NONE] + [ErrorCode.INVALID_REQUEST] * (len(creations) - 1)
    assert all(result.error_message for result in response.results[1:])
    # only the valid ACL was stored, and the broker still answers
    described = client.request(ApiKey.DESCRIBE_ACLS, 3, {
        "resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert described.error_code == ErrorCode.NONE
    assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == \
        [("t", ["User:alice"])]
    bad_filter = client.request(ApiKey.DESCRIBE_ACLS, 3, {
        "resource_type_filter": 0, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert bad_filter.error_code == ErrorCode.INVALID_REQUEST


def test_delete_acls_with_filters(broker_factory):
    broker = secured_broker(broker_factory, [])
    client = WireClient(broker.port)
    admin = admin_for(broker)
    grant(admin, TOPIC, "a", Op.READ)
    grant(admin, TOPIC, "b", Op.READ)
    response = client.request(ApiKey.DELETE_ACLS, 3, {"filters": [
        {"resource_type_filter": 2, "resource_name_filter": "a", "pattern_type_filter": 3,
         "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1},
        {"resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
         "principal_filter": None, "host_filter": None, "operation": 0, "permission_type": 1},
    ]})
    first, bad = response.filter_results
    assert first.error_code == ErrorCode.NONE
    assert [(m.resource_name, m.operation) for m in first.matching_acls] == [("a", 3)]
    assert bad.error_code == ErrorCode.INVALID_REQUEST and not bad.matching_acls
    names = {acl.name for acl in every_acl(admin) if acl.restype == TOPIC}
    assert names == {"b"}


def test_acl_apis_without_an_authorizer_answer_security_disabled(broker):
    client = WireClient(broker.port)
    response = client.request(ApiKey.CREATE_ACLS, 3, {"creations": [_creation()]})
    assert response.results[0].error_code == ErrorCode.SECURITY_DISABLED
    described = client.request(ApiKey.DESCRIBE_ACLS, 1, {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert described.error_code == ErrorCode.SECURITY_DISABLED


def test_managing_acls_needs_alter_on_the_cluster(broker_factory):
    broker = secured_broker(broker_factory, [])
    admin = admin_for(broker)
    # ANONYMOUS holds ALTER on the cluster; take it away with a DENY
    grant(admin, ResourceType.BROKER, "kafka-cluster", Op.ALTER,
          permission=model.AclPermissionType.DENY)
    [future] = admin.create_acls([binding(TOPIC, "t", Op.READ)]).values()
    try:
        future.result(ADMIN_TIMEOUT_S)
        raise AssertionError("CreateAcls without ALTER on the cluster succeeded")
    except Exception as exc:  # librdkafka's KafkaException
        assert exc.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_inter_broker_requests_need_cluster_action(broker_factory):
    broker = secured_broker(broker_factory, [])
    client = WireClient(broker.port)
    response = client.request(ApiKey.UPDATE_METADATA, 6, {
        "controller_id": 0, "controller_epoch": 99, "broker_epoch": -1,
        "topic_states": [], "live_brokers": []})
    assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    stop = client.request(ApiKey.STOP_REPLICA, 3, {
        "controller_id": 0, "controller_epoch": 99, "broker_epoch": -1, "topic_states": []})
    assert stop.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # AddPartitionsToTxn v4+ is a broker's (KIP-890); v0-3 stay the clients'.
    verify = client.request(ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [{
        "transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "verify_only": True,
        "topics": [{"name": "t", "partitions": [0]}]}]})
    assert (verify.error_code, verify.results_by_transaction) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    # the refusal left the broker serving
    assert client.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                   "client_software_version": "1"}).error_code == 0


def test_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(broker_factory):
    broker = secured_broker(broker_factory, ["idem"])
    client = WireClient(broker.port)
    body = {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1,
            "producer_epoch": -1}
    assert client.request(ApiKey.INIT_PRODUCER_ID, 4, body).error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    transactional = client.request(ApiKey.INIT_PRODUCER_ID, 4,
                                   {**body, "transactional_id": "txn-1"})
    assert transactional.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(admin_for(broker), TOPIC, "idem", Op.WRITE)
    assert produce_one(broker.bootstrap, "idem", **{"enable.idempotence": True, "retries": 5}) is None


def test_describe_configs_needs_describe_configs(broker_factory):
    broker = secured_broker(broker_factory, ["conf"])
    admin = admin_for(broker)
    resource = ConfigResource("topic", "conf")
    try:
        admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
        raise AssertionError("DescribeConfigs without DESCRIBE_CONFIGS succeeded")
    except Exception as exc:
        assert exc.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin, TOPIC, "conf", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    configs = admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    assert "retention.ms" in configs


def test_transactional_producer_needs_write_on_its_transactional_id(broker_factory):
    broker = secured_broker(broker_factory, ["ledger-tx"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "ledger-tx", Op.WRITE)
    settings = {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1",
                "transaction.timeout.ms": 10000}
    refused = Producer(settings)
    try:
        refused.init_transactions(15)
        raise AssertionError("init_transactions without WRITE on the transactional id succeeded")
    except KafkaException as exc:
        assert exc.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(admin, ResourceType.TRANSACTIONAL_ID, "tx-", Op.WRITE,
          pattern=ResourcePatternType.PREFIXED)
    producer = Producer({**settings, "transactional.id": "tx-2"})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("ledger-tx", b"committed")
    producer.commit_transaction(15)


def test_committing_offsets_needs_read_on_group_and_topic(broker_factory):
    broker = secured_broker(broker_factory, ["commits"])
    admin = admin_for(broker)
    grant(admin, TOPIC, "commits", Op.WRITE)
    assert produce_one(broker.bootstrap, "commits") is None
    grant(admin, ResourceType.GROUP, "committers", Op.READ)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committers",
                         "enable.auto.commit": False})
    try:
        result = consumer.commit(offsets=[TopicPartition("commits", 0, 1)], asynchronous=False)
        raise AssertionError(f"commit without READ on the topic succeeded: {result}")
    except Exception as exc:
        assert exc.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin, TOPIC, "commits", Op.READ)
    committed = consumer.commit(offsets=[TopicPartition("commits", 0, 1)], asynchronous=False)
    assert [(tp.offset, tp.error) for tp in committed] == [(1, None)]
    assert consumer.committed([TopicPartition("commits", 0)], timeout=15)[0].offset == 1
    consumer.close()


def test_reassignments_need_alter_and_describe_on_the_cluster(broker_factory):
    broker = secured_broker(broker_factory, ["moves"])
    client = WireClient(broker.port)
    me = client.request(ApiKey.METADATA, 8, {"topics": [], "allow_auto_topic_creation": False,
                                             "include_cluster_authorized_operations": False,
                                             "include_topic_authorized_operations": False}
                        ).brokers[0].node_id
    alter = {"timeout_ms": 10_000, "topics": [
        {"name": "moves", "partitions": [{"partition_index": 0, "replicas": [me]}]}]}
    listing = {"timeout_ms": 10_000, "topics": None}
    allowed = client.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, alter)
    assert allowed.error_code == 0 and allowed.responses[0].partitions[0].error_code == 0
    assert client.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, listing).error_code == 0
    admin = admin_for(broker)
    grant(admin, ResourceType.BROKER, "kafka-cluster", Op.DESCRIBE,
          permission=model.AclPermissionType.DENY)
    grant(admin, ResourceType.BROKER, "kafka-cluster", Op.ALTER,  # last: granting needs ALTER
          permission=model.AclPermissionType.DENY)
    refused = client.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, alter)
    assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and not refused.responses
    hidden = client.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, listing)
    assert hidden.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_dynamic_broker_configs_need_alter_configs_on_the_cluster(broker_factory):
    broker = secured_broker(broker_factory, [])
    admin = admin_for(broker)
    rate = ConfigEntry("leader.replication.throttled.rate", "1000",
                       incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("broker", "0", incremental_configs=[rate])
    try:
        admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
        raise AssertionError("IncrementalAlterConfigs without ALTER_CONFIGS on the cluster succeeded")
    except KafkaException as exc:
        assert exc.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    grant(admin, ResourceType.BROKER, "kafka-cluster", Op.ALTER_CONFIGS)
    admin.incremental_alter_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
    described = ConfigResource("broker", "0")
    entry = admin.describe_configs([described])[described].result(ADMIN_TIMEOUT_S)[rate.name]
    assert (entry.value, entry.source) == ("1000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

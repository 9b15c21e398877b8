"""The authorizer's decisions against Kafka's AclAuthorizer rules, and ACL
filters (DescribeAcls / DeleteAcls)."""
from __future__ import annotations

import pytest

from kcore.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    operation,
    operations_bit_field,
    operations_of_bit_field,
    resource_type,
)
from kcore.security.authorizer import Authorizer

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"
HOST = "127.0.0.1"


def acl(name: str, op: AclOperation, permission=ALLOW, principal=ALICE, host="*",
        kind=TOPIC, pattern=LITERAL) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, permission)


def authorizer(*acls: AclBinding, **kwargs) -> Authorizer:
    result = Authorizer(**kwargs)
    result.replace(acls)
    return result


def allowed(auth: Authorizer, op: AclOperation, name: str, principal=ALICE, host=HOST,
            kind=TOPIC) -> bool:
    return auth.authorize(principal, host, op, kind, name)


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found():
    assert not allowed(authorizer(), Op.READ, "t")
    assert allowed(authorizer(allow_if_no_acl=True), Op.READ, "t")
    # an ACL on the resource, even for someone else, ends "no ACL found"
    covered = authorizer(acl("t", Op.READ, principal=BOB), allow_if_no_acl=True)
    assert not allowed(covered, Op.READ, "t")
    assert allowed(covered, Op.READ, "other")


def test_allow_grants_only_its_operation_and_principal():
    auth = authorizer(acl("t", Op.READ))
    assert allowed(auth, Op.READ, "t")
    assert not allowed(auth, Op.WRITE, "t")
    assert not allowed(auth, Op.READ, "t", principal=BOB)
    assert not allowed(auth, Op.READ, "t2")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_read_write_delete_alter_imply_describe(granted):
    auth = authorizer(acl("t", granted))
    assert allowed(auth, Op.DESCRIBE, "t")


def test_alter_configs_implies_describe_configs_but_not_the_reverse():
    assert allowed(authorizer(acl("t", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Op.DESCRIBE_CONFIGS)), Op.ALTER_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Op.CREATE)), Op.DESCRIBE, "t")


def test_all_grants_every_operation():
    auth = authorizer(acl("t", Op.ALL))
    assert all(allowed(auth, op, "t") for op in (Op.READ, Op.WRITE, Op.ALTER_CONFIGS, Op.DELETE))


def test_deny_wins_over_allow():
    auth = authorizer(acl("t", Op.ALL), acl("t", Op.WRITE, DENY))
    assert not allowed(auth, Op.WRITE, "t")
    assert allowed(auth, Op.READ, "t")
    # a DENY of ALL refuses what an ALLOW of the exact operation grants
    assert not allowed(authorizer(acl("t", Op.READ), acl("t", Op.ALL, DENY)), Op.READ, "t")


def test_deny_of_an_implying_operation_does_not_deny_describe():
    auth = authorizer(acl("t", Op.DESCRIBE), acl("t", Op.WRITE, DENY))
    assert allowed(auth, Op.DESCRIBE, "t")


def test_prefixed_acl_covers_names_starting_with_it():
    auth = authorizer(acl("orders-", Op.WRITE, pattern=PREFIXED))
    assert allowed(auth, Op.WRITE, "orders-eu")
    assert allowed(auth, Op.WRITE, "orders-")
    assert not allowed(auth, Op.WRITE, "orders")
    assert not allowed(auth, Op.WRITE, "payments")


def test_literal_wildcard_name_and_principal():
    auth = authorizer(acl("*", Op.READ, principal="User:*"))
    assert allowed(auth, Op.READ, "anything", principal=BOB)
    assert not allowed(auth, Op.READ, "anything", kind=GROUP)
    # a literal "*" ACL is not a prefix: "*x" is just a name
    assert not allowed(authorizer(acl("*", Op.READ, pattern=PREFIXED)), Op.READ, "t")


def test_host_must_match_unless_star():
    auth = authorizer(acl("t", Op.READ, host="10.0.0.1"))
    assert allowed(auth, Op.READ, "t", host="10.0.0.1")
    assert not allowed(auth, Op.READ, "t", host=HOST)
    denied_from_one = authorizer(acl("t", Op.READ), acl("t", Op.READ, DENY, host="10.0.0.1"))
    assert allowed(denied_from_one, Op.READ, "t", host=HOST)
    assert not allowed(denied_from_one, Op.READ, "t", host="10.0.0.1")


def test_super_users_bypass_every_acl():
    auth = authorizer(acl("t", Op.ALL, DENY, principal=BOB), super_users=[BOB])
    assert allowed(auth, Op.WRITE, "t", principal=BOB)
    assert allowed(auth, Op.CLUSTER_ACTION, "kafka-cluster", principal=BOB, kind=CLUSTER)


def by_type(auth: Authorizer, op: AclOperation = Op.WRITE, principal=ALICE, host=HOST) -> bool:
    return auth.authorize_by_resource_type(principal, host, op, TOPIC)


def test_by_resource_type_an_allow_of_a_name_or_prefix_not_yet_created_is_enough():
    assert by_type(authorizer(acl("ledger", Op.WRITE)))
    assert by_type(authorizer(acl("orders-", Op.ALL, pattern=PREFIXED)))
    assert by_type(authorizer(acl("*", Op.WRITE, principal="User:*")), principal=BOB)
    assert not by_type(authorizer(acl("ledger", Op.READ)))  # no other operation grants it
    assert not by_type(authorizer(acl("ledger", Op.WRITE, principal=BOB)))
    assert not by_type(authorizer(acl("ledger", Op.WRITE, host="10.0.0.1")))
    assert not by_type(authorizer(acl("ledger", Op.WRITE, kind=GROUP)))
    assert not by_type(authorizer())


def test_by_resource_type_a_deny_covering_every_allowed_name_refuses():
    assert not by_type(authorizer(acl("ledger", Op.WRITE), acl("ledger", Op.WRITE, DENY)))
    assert not by_type(authorizer(acl("orders-eu", Op.WRITE), acl("orders-", Op.ALL, DENY, pattern=PREFIXED)))
    assert not by_type(authorizer(acl("orders-", Op.WRITE, pattern=PREFIXED),
                                  acl("ord", Op.WRITE, DENY, principal="User:*", pattern=PREFIXED)))
    assert not by_type(authorizer(acl("ledger", Op.WRITE), acl("*", Op.WRITE, DENY)))
    # a deny of one name, or of a longer prefix, leaves the rest allowed
    assert by_type(authorizer(acl("ledger", Op.WRITE), acl("audit", Op.WRITE),
                              acl("ledger", Op.WRITE, DENY)))
    assert by_type(authorizer(acl("orders-", Op.WRITE, pattern=PREFIXED),
                              acl("orders-eu", Op.WRITE, DENY, pattern=PREFIXED)))
    assert by_type(authorizer(acl("orders-", Op.WRITE, pattern=PREFIXED), acl("orders-", Op.WRITE, DENY)))


def test_by_resource_type_super_users_may_and_no_acl_found_grants_nothing():
    assert by_type(authorizer(acl("*", Op.ALL, DENY), super_users=[BOB]), principal=BOB)
    # Kafka 4.2's StandardAuthorizer: only ACLs grant by type
    assert not by_type(authorizer(allow_if_no_acl=True))


def test_replace_clears_cached_decisions():
    auth = authorizer()
    assert not allowed(auth, Op.READ, "t")
    auth.replace([acl("t", Op.READ)])
    assert allowed(auth, Op.READ, "t")
    auth.replace([])
    assert not allowed(auth, Op.READ, "t")


def test_creation_errors_name_each_invalid_binding():
    auth = authorizer()
    bindings = [
        acl("t", Op.READ),
        AclBinding(resource_type(99), "t", LITERAL, ALICE, "*", Op.READ, ALLOW),
        acl("t", operation(0)),
        acl("t", Op.READ, pattern=PatternType.MATCH),
        acl("t", Op.READ, permission=AclPermissionType.ANY),
        acl("t", Op.READ, principal="alice"),
        acl("wrong-name", Op.CLUSTER_ACTION, kind=CLUSTER),
        acl("", Op.READ),
    ]
    acls, errors = auth.with_created(bindings)
    assert errors[0] is None and acls == {bindings[0]}
    assert all(error for error in errors[1:]), errors
    assert "resource type" in errors[1] and "operation" in errors[2]
    assert "pattern type" in errors[3] and "Type:name" in errors[5]


def test_filters_match_literal_prefixed_any_and_match():
    literal, prefixed, wildcard = acl("orders", Op.READ), acl("ord", Op.READ, pattern=PREFIXED), \
        acl("*", Op.WRITE, principal=BOB)
    auth = authorizer(literal, prefixed, wildcard, acl("g", Op.READ, kind=GROUP))

    def find(kind=TOPIC, name=None, pattern=PatternType.ANY, principal=None, op=Op.ANY):
        return set(auth.describe(AclFilter(kind, name, pattern, principal, None, op,
                                           AclPermissionType.ANY)))

    assert find(name="orders", pattern=LITERAL) == {literal}
    assert find(name="orders", pattern=PatternType.MATCH) == {literal, prefixed, wildcard}
    assert find(pattern=PREFIXED) == {prefixed}
    assert find(principal=BOB) == {wildcard}
    assert find(op=Op.WRITE) == {wildcard}
    assert len(find(kind=ResourceType.ANY)) == 4


def test_delete_filters_remove_what_they_match_and_refuse_unknown_codes():
    auth = authorizer(acl("a", Op.READ), acl("b", Op.READ))
    bad = AclFilter(resource_type(42), None, PatternType.ANY, None, None, Op.ANY,
                    AclPermissionType.ANY)
    good = AclFilter(TOPIC, "a", LITERAL, None, None, Op.ANY, AclPermissionType.ANY)
    acls, results = auth.with_deleted([bad, good])
    assert isinstance(results[0], str) and results[1] == [acl("a", Op.READ)]
    assert acls == {acl("b", Op.READ)}


def test_operations_bit_field_sets_bit_code_per_operation():
    """Kafka's Utils.to32BitField: READ (3) and DESCRIBE (8) are 2**3 + 2**8."""
    field = operations_bit_field([AclOperation.READ, AclOperation.DESCRIBE])
    assert field == 264
    assert operations_of_bit_field(field) == {AclOperation.READ, AclOperation.DESCRIBE}
    assert operations_of_bit_field(-2**31) == set()  # INT32_MIN: not asked for

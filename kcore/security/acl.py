"""Kafka's ACL model: resource patterns, bindings, filters and matching.

The codes are the wire values of apache/kafka ``common/resource/
ResourceType.java``, ``PatternType.java``, ``common/acl/AclOperation.java``
and ``AclPermissionType.java``; a number outside them decodes as UNKNOWN,
as Kafka's ``fromCode`` does. A binding is (resource type, name, pattern
type, principal, host, operation, permission); a filter is the same with
ANY / MATCH / None (any) in any position (DescribeAcls, DeleteAcls).

``SUBJECT`` is kcore's own: the schema registry's subjects. Kafka's wire
has no code for it (Confluent authorizes its registry with its own RBAC),
so its value lies outside the int8 of the wire: no request can name it,
an ANY filter of DescribeAcls or DeleteAcls does not match it, and its
ACLs are managed through the registry (docs/schema-registry.md).
"""
from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple

WILDCARD = "*"  # literal resource name, principal "User:*" and host
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the only name of the CLUSTER resource


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7
    # Not a Kafka code (see the module docstring); never on the wire.
    SUBJECT = 1000


# The resource types Kafka's wire carries.
WIRE_RESOURCE_TYPES = frozenset(kind for kind in ResourceType if kind < 128)


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _decode(enum: type[IntEnum], code: int) -> IntEnum:
    try:
        return enum(code)
    except ValueError:
        return enum(0)  # UNKNOWN


def resource_type(code: int) -> ResourceType:
    decoded = _decode(ResourceType, code)
    return decoded if decoded in WIRE_RESOURCE_TYPES else ResourceType.UNKNOWN  # type: ignore[return-value]


def pattern_type(code: int) -> PatternType:
    return _decode(PatternType, code)  # type: ignore[return-value]


def operation(code: int) -> AclOperation:
    return _decode(AclOperation, code)  # type: ignore[return-value]


def permission(code: int) -> AclPermissionType:
    return _decode(AclPermissionType, code)  # type: ignore[return-value]


# An ALLOW of any of these grants DESCRIBE (Kafka's implied operations).
IMPLIED_BY = {
    AclOperation.DESCRIBE: (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                            AclOperation.DELETE, AclOperation.ALTER),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}

_Op = AclOperation
# What an ACL can grant on each resource type (Kafka's
# AclEntry.supportedOperations; GROUP's configs came with KIP-848). KIP-430
# answers a subset of these, as a bit field.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_Op.READ, _Op.WRITE, _Op.CREATE, _Op.DESCRIBE, _Op.DELETE, _Op.ALTER,
                         _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS),
    ResourceType.GROUP: (_Op.READ, _Op.DESCRIBE, _Op.DELETE, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_Op.CREATE, _Op.CLUSTER_ACTION, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS,
                           _Op.IDEMPOTENT_WRITE, _Op.ALTER, _Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_Op.DESCRIBE, _Op.WRITE),
    ResourceType.SUBJECT: (_Op.DESCRIBE, _Op.WRITE),
}


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """Bit ``code`` set per operation (Kafka's Utils.to32BitField)."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field


def operations_of_bit_field(field: int) -> set[AclOperation]:
    return {operation for operation in AclOperation if field >= 0 and field & (1 << int(operation))}


class AclBinding(NamedTuple):
    """One ACL: ``principal`` may ``operation`` on the resources the
    pattern matches, from ``host`` ("*" = any), or is denied it."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def to_json(self) -> dict:
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal,
                "host": self.host, "operation": self.operation.name,
                "permission": self.permission.name}

    @classmethod
    def from_json(cls, data: dict) -> AclBinding:
        return cls(ResourceType[data["resource_type"]], data["resource_name"],
                   PatternType[data["pattern_type"]], data["principal"], data["host"],
                   AclOperation[data["operation"]], AclPermissionType[data["permission"]])


class AclError(ValueError):
    """A binding that cannot be created; Kafka answers INVALID_REQUEST."""


def validate_binding(binding: AclBinding) -> None:
    """Raise AclError the way Kafka's authorizer refuses a creation."""
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise AclError(f"invalid resource type {binding.resource_type.name}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(f"invalid pattern type {binding.pattern_type.name}: "
                       "an ACL is LITERAL or PREFIXED")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise AclError(f"invalid operation {binding.operation.name}")
    if binding.permission in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
        raise AclError(f"invalid permission type {binding.permission.name}")
    if not binding.resource_name:
        raise AclError("the resource name is empty")
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        raise AclError(f"the only name of the CLUSTER resource is {CLUSTER_NAME}")
    kind, sep, name = binding.principal.partition(":")
    if not sep or not kind or not name:
        raise AclError(f"principal {binding.principal!r} is not of the form Type:name")
    if not binding.host:
        raise AclError("the host is empty (use * for any host)")


class AclFilter(NamedTuple):
    """DescribeAcls / DeleteAcls filter: None names match anything, ANY
    codes match every value; pattern MATCH selects the ACLs that would
    apply to the named resource (literal, wildcard and prefixes of it)."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def invalid_reason(self) -> str | None:
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value == 0:
                return f"unknown {type(value).__name__} in the filter"
        return None

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type == ResourceType.ANY:
            if acl.resource_type not in WIRE_RESOURCE_TYPES:
                return False
        elif acl.resource_type != self.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation != AclOperation.ANY and acl.operation != self.operation:
            return False
        return self.permission == AclPermissionType.ANY or acl.permission == self.permission

    def _matches_pattern(self, acl: AclBinding) -> bool:
        wanted = self.pattern_type
        if wanted == PatternType.MATCH:
            if self.resource_name is None:
                return True
            return pattern_matches(acl.pattern_type, acl.resource_name, self.resource_name)
        if wanted != PatternType.ANY and acl.pattern_type != wanted:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name


def pattern_matches(kind: PatternType, pattern: str, name: str) -> bool:
    """Does an ACL's resource pattern cover the resource named ``name``?"""
    if kind == PatternType.LITERAL:
        return pattern == name or pattern == WILDCARD
    return kind == PatternType.PREFIXED and name.startswith(pattern)

"""kcore's ACL authorizer: Kafka's AclAuthorizer semantics over an index.

A request is allowed when its principal is a super user; else, among the
ACLs whose pattern covers the resource (the literal name, the literal
wildcard ``*`` and every prefix of the name), any DENY matching principal
(or ``User:*``), host (or ``*``) and operation (or ALL) refuses it, and one
such ALLOW of the operation, of one that implies it (READ, WRITE, DELETE,
ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) or of ALL
grants it; with neither, it is refused. A resource that no ACL covers (of
any principal) is allowed only with ``allow.everyone.if.no.acl.found``.

Decisions are cached per (principal, host, operation, resource) until the
ACL set changes (the cache also starts over at MAX_CACHED_DECISIONS
entries): a produce of one topic costs one dict lookup, not a scan of the
prefixed ACLs (bench/bench_authorizer.py).

The authorizer stores nothing. It holds the ACL set the broker installs
with ``replace``: at start, and each time the security store
(``SecurityStore``, kcore/metadata_store/) reports a change made on any
broker, this one included. CreateAcls and DeleteAcls validate their
bindings and filters with ``with_created`` / ``with_deleted``, which leave
the set as it is, and write the changes to the store; the new set reaches
every broker's authorizer from there.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from kcore.security.acl import (
    IMPLIED_BY,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclError,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    validate_binding,
)

log = logging.getLogger(__name__)

# Cached decisions before the cache starts over: bounded memory against a
# client cycling through made-up topic names; 64k entries are ~10 MB.
MAX_CACHED_DECISIONS = 65536

Decision = tuple[str, str, int, int, str]


class Authorizer:
    """Authorization decisions and the ACL set they come from."""

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: set[AclBinding] = set()
        # resource type -> literal name -> ACLs; resource type -> prefixed ACLs
        self._literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        self._decisions: dict[Decision, bool] = {}

    # -- decisions ------------------------------------------------------------
    def authorize(self, principal: str, host: str, op: AclOperation, kind: ResourceType,
                  name: str) -> bool:
        key = (principal, host, op, kind, name)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(principal, host, op, kind, name)
            if len(self._decisions) >= MAX_CACHED_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def authorize_by_resource_type(self, principal: str, host: str, op: AclOperation,
                                   kind: ResourceType) -> bool:
        """Whether ``op`` is allowed on some resource of type ``kind``, named
        or not yet (KIP-679: an idempotent producer needs WRITE on any
        topic), as Kafka 4.2's StandardAuthorizer decides it: a super user
        may; else one ALLOW of ``op`` (or ALL) for the principal and host
        whose names no DENY covers: a DENY of the same literal name, or a
        DENY prefix of it; a literal DENY of ``*`` refuses all.
        allow.everyone.if.no.acl.found plays no part here, as in Kafka."""
        if principal in self.super_users:
            return True
        principals, hosts = (principal, WILDCARD_PRINCIPAL), (host, WILDCARD)
        applicable = [acl for acl in self._acls if acl.resource_type == kind
                      and acl.principal in principals and acl.host in hosts
                      and acl.operation in (op, AclOperation.ALL)]
        denied = {(acl.pattern_type, acl.resource_name) for acl in applicable
                  if acl.permission == AclPermissionType.DENY}
        if (PatternType.LITERAL, WILDCARD) in denied:
            return False
        denied_prefixes = {name for pattern, name in denied if pattern == PatternType.PREFIXED}
        for acl in applicable:
            if acl.permission != AclPermissionType.ALLOW:
                continue
            name = acl.resource_name
            if acl.pattern_type == PatternType.LITERAL and name == WILDCARD:
                return True
            if acl.pattern_type == PatternType.LITERAL and (PatternType.LITERAL, name) in denied:
                continue
            if not any(name[:end] in denied_prefixes for end in range(1, len(name) + 1)):
                return True
        return False

    def _decide(self, principal: str, host: str, op: AclOperation, kind: ResourceType,
                name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = self.matching_acls(kind, name)
        if not acls:
            return self.allow_if_no_acl
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)
        applicable = [acl for acl in acls if acl.principal in principals and acl.host in hosts]
        if any(acl.permission == AclPermissionType.DENY
               and acl.operation in (op, AclOperation.ALL) for acl in applicable):
            return False
        granting = IMPLIED_BY.get(op, (op,))
        return any(acl.permission == AclPermissionType.ALLOW
                   and (acl.operation in granting or acl.operation == AclOperation.ALL)
                   for acl in applicable)

    def matching_acls(self, kind: ResourceType, name: str) -> list[AclBinding]:
        literal = self._literal.get(kind, {})
        found = list(literal.get(name, ()))
        if name != WILDCARD:
            found.extend(literal.get(WILDCARD, ()))
        found.extend(acl for acl in self._prefixed.get(kind, ())
                     if name.startswith(acl.resource_name))
        return found

    # -- the ACL set ----------------------------------------------------------
    @property
    def acls(self) -> frozenset[AclBinding]:
        return frozenset(self._acls)

    def replace(self, acls: Iterable[AclBinding]) -> None:
        """Install the whole ACL set (at start, and when the store reports
        a change made on any broker)."""
        acls = set(acls)
        if acls == self._acls:
            return  # keep the cached decisions
        self._acls = acls
        self._literal = {}
        self._prefixed = {}
        for acl in self._acls:
            if acl.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(acl.resource_type, []).append(acl)
            else:
                self._literal.setdefault(acl.resource_type, {}).setdefault(
                    acl.resource_name, []).append(acl)
        self._decisions.clear()

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted(acl for acl in self._acls if acl_filter.matches(acl))

    def with_created(self, bindings: Sequence[AclBinding]
                     ) -> tuple[set[AclBinding], list[str | None]]:
        """The ACL set after these creations and, per creation, None or why
        it was refused (Kafka: INVALID_REQUEST)."""
        acls = set(self._acls)
        errors: list[str | None] = []
        for binding in bindings:
            try:
                validate_binding(binding)
            except AclError as exc:
                errors.append(str(exc))
                continue
            acls.add(binding)
            errors.append(None)
        return acls, errors

    def with_deleted(self, filters: Sequence[AclFilter]
                     ) -> tuple[set[AclBinding], list[list[AclBinding] | str]]:
        """The ACL set after these deletions and, per filter, the ACLs it
        removed or why the filter is invalid."""
        acls = set(self._acls)
        results: list[list[AclBinding] | str] = []
        for acl_filter in filters:
            reason = acl_filter.invalid_reason()
            if reason is not None:
                results.append(reason)
                continue
            matched = sorted(acl for acl in self._acls if acl_filter.matches(acl))
            acls.difference_update(matched)
            results.append(matched)
        return acls, results

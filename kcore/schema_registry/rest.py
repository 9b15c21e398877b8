"""Confluent Schema Registry's REST API (v1), answered from this broker.

``dispatch(service, request)`` routes one HTTP request to the registry
(registry.py) and answers ``(status, JSON body)`` in Confluent's shapes:
``{"id": 1}`` for a registration, ``{"subject", "version", "id",
"schemaType", "references", "schema"}`` for a version (``schemaType``
left out for Avro, ``references`` when there are none), lists of subjects
and versions, ``{"compatibilityLevel": ...}`` and ``{"mode": ...}``, and
``{"error_code", "message"}`` for every refusal (errors.py).

Writes go to the primary (store.py): on another broker they are sent on
to it (forward.py) with the caller's credentials, as Confluent's
followers forward to their leader; a registration of a schema the
subject already holds is answered locally, without a write. A read that
would answer "not found" first catches up with the primary, so what was
written through one broker is found through every other.

Each route names what it needs of the caller (auth.py): DESCRIBE or
WRITE on the subject, or on the cluster for the global settings.
"""
from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

from kcore.schema_registry import errors, schema_types
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.records import SchemaRecord
from kcore.schema_registry.registry import SchemaRegistry
from kcore.schema_registry.store import SchemaStore
from kcore.security.acl import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    validate_binding,
)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class RestRequest:
    method: str
    path: str
    query: dict[str, str]
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    target: str = ""  # path and query as received, for forwarding


# (operation, subject or None for the whole registry) -> raises RegistryError 40301 when refused
Authorize = Callable[[AclOperation, "str | None"], None]
# Sends a write on to the primary; (status, body) as it answered.
Forward = Callable[[RestRequest], Awaitable[tuple[int, bytes]]]


class SubjectAcls(Protocol):
    """The broker's ACLs as the registry's ``/acls`` routes change them."""

    def current(self) -> frozenset[AclBinding] | None:
        """Every ACL in force; None when the broker has no authorizer."""

    async def change(self, added: list[AclBinding], removed: list[AclBinding]) -> None: ...


@dataclass
class RegistryService:
    """What the REST layer works with on one broker."""

    store: SchemaStore
    registry: SchemaRegistry
    forward: Forward | None = None
    acls: SubjectAcls | None = None


@dataclass
class Call:
    service: RegistryService
    request: RestRequest
    params: list[str]
    authorize: Authorize

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.request.query.get(name)
        return default if value is None else value.lower() == "true"

    def json_body(self) -> Any:
        try:
            return json.loads(self.request.body or b"null")
        except (UnicodeDecodeError, ValueError) as exc:
            raise RegistryError(400, f"the body is not JSON: {exc}") from None


Handler = Callable[[Call], Awaitable[Any]]
_ROUTES: list[tuple[str, re.Pattern, Handler, bool]] = []  # method, path, handler, writes


def _route(method: str, pattern: str, writes: bool = False) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, re.compile("^" + pattern.replace("{}", "([^/]+)") + "/?$"), handler, writes))
        return handler
    return register


async def dispatch(service: RegistryService, request: RestRequest, authorize: Authorize) -> tuple[int, bytes]:
    """Answer one request: (HTTP status, JSON body)."""
    try:
        for method, pattern, handler, writes in _ROUTES:
            match = pattern.match(request.path)
            if match is None:
                continue
            if method != request.method:
                continue
            call = Call(service, request, [unquote(part) for part in match.groups()], authorize)
            await service.store.wait_ready()
            if writes and not await _primary(service):
                return await _forwarded(service, call, handler)
            return 200, _json(await handler(call))
        if any(pattern.match(request.path) for _, pattern, _, _ in _ROUTES):
            raise RegistryError(405, "HTTP 405 Method Not Allowed")
        raise RegistryError(404, "HTTP 404 Not Found")
    except RegistryError as exc:
        return exc.status, _json(exc.body())


async def _primary(service: RegistryService) -> bool:
    await service.store.ensure_topic()
    return service.store.is_primary()


async def _forwarded(service: RegistryService, call: Call, handler: Handler) -> tuple[int, bytes]:
    """A write on a broker that is not the primary: a registration the
    subject already holds is answered here; the rest goes to the primary."""
    if handler is register:
        call.authorize(AclOperation.WRITE, call.params[0])
        try:
            found = service.registry.lookup(call.params[0], call.json_body(), call.flag("normalize"))
            return 200, _json({"id": found.schema_id})
        except RegistryError as exc:
            if exc.error_code not in (errors.SUBJECT_NOT_FOUND, errors.SCHEMA_NOT_FOUND):
                raise
    if service.forward is None:
        raise RegistryError(errors.UNKNOWN_LEADER, "Request failed since the leader is unknown")
    if call.request.headers.get("x-forwarded-by"):
        raise RegistryError(errors.REQUEST_FORWARDING_FAILED, "a forwarded write reached a broker that is no "
                                                              "longer the registry's primary; try again")
    status, body = await service.forward(call.request)
    await service.store.sync()
    return status, body


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


async def _sync_if_missing(call: Call, read: Callable[[], Any]) -> Any:
    """``read()``, and once more after catching up with the primary if it
    found nothing: the thing may have been written through another broker."""
    try:
        return read()
    except RegistryError as exc:
        if exc.error_code not in (errors.SUBJECT_NOT_FOUND, errors.VERSION_NOT_FOUND, errors.SCHEMA_NOT_FOUND):
            raise
        await call.service.store.sync()
        return read()


def version_json(record: SchemaRecord, registry: SchemaRegistry, fmt: str | None = None) -> dict:
    value: dict[str, Any] = {"subject": record.subject, "version": record.version, "id": record.schema_id}
    if record.schema_type != schema_types.AVRO:
        value["schemaType"] = record.schema_type
    if record.references:
        value["references"] = [reference.to_json() for reference in record.references]
    value["schema"] = _rendered(record, registry, fmt)
    return value


def _rendered(record: SchemaRecord, registry: SchemaRegistry, fmt: str | None) -> str:
    if fmt is None or record.schema_type != schema_types.PROTOBUF:
        return record.schema
    return registry.parse_record(record).render(fmt)


def _schema_id(call: Call) -> int:
    try:
        return int(call.params[0])
    except ValueError:
        raise errors.schema_not_found() from None


def _authorize_id(call: Call, record: SchemaRecord) -> None:
    """Reading a schema by id needs DESCRIBE on one of the subjects that hold it."""
    holders = call.service.registry.state.holders(record.schema_id, deleted=True)
    refused: RegistryError | None = None
    for holder in holders:
        try:
            call.authorize(AclOperation.DESCRIBE, holder.subject)
            return
        except RegistryError as exc:
            refused = exc
    if refused is not None:
        raise refused


# -- schemas ------------------------------------------------------------------

@_route("GET", "")
async def root(call: Call) -> Any:
    return {}


@_route("GET", "/schemas/types")
async def schema_types_(call: Call) -> Any:
    return list(schema_types.SCHEMA_TYPES)


@_route("GET", "/contexts")
async def contexts(call: Call) -> Any:
    return ["."]


@_route("GET", "/schemas/ids/{}")
async def schema_by_id(call: Call) -> Any:
    registry = call.service.registry
    record = await _sync_if_missing(call, lambda: registry.schema_by_id(_schema_id(call)))
    _authorize_id(call, record)
    value: dict[str, Any] = {}
    if record.schema_type != schema_types.AVRO:
        value["schemaType"] = record.schema_type
    if record.references:
        value["references"] = [reference.to_json() for reference in record.references]
    value["schema"] = _rendered(record, registry, call.request.query.get("format"))
    if call.flag("fetchMaxId"):
        value["maxId"] = registry.state.max_id
    return value


@_route("GET", "/schemas/ids/{}/schema")
async def raw_schema_by_id(call: Call) -> Any:
    record = await _sync_if_missing(call, lambda: call.service.registry.schema_by_id(_schema_id(call)))
    _authorize_id(call, record)
    return _raw(record, call.service.registry, call.request.query.get("format"))


def _raw(record: SchemaRecord, registry: SchemaRegistry, fmt: str | None) -> Any:
    """The schema itself: JSON for Avro and JSON Schema, text for Protobuf."""
    text = _rendered(record, registry, fmt)
    if record.schema_type == schema_types.PROTOBUF:
        return text
    return json.loads(text)


@_route("GET", "/schemas/ids/{}/subjects")
async def subjects_by_id(call: Call) -> Any:
    record = await _sync_if_missing(call, lambda: call.service.registry.schema_by_id(_schema_id(call)))
    _authorize_id(call, record)
    holders = call.service.registry.state.holders(record.schema_id, call.flag("deleted"))
    return sorted({holder.subject for holder in holders})


@_route("GET", "/schemas/ids/{}/versions")
async def versions_by_id(call: Call) -> Any:
    record = await _sync_if_missing(call, lambda: call.service.registry.schema_by_id(_schema_id(call)))
    _authorize_id(call, record)
    return [{"subject": holder.subject, "version": holder.version}
            for holder in call.service.registry.state.holders(record.schema_id, call.flag("deleted"))]


@_route("GET", "/schemas")
async def all_schemas(call: Call) -> Any:
    registry = call.service.registry
    prefix = call.request.query.get("subjectPrefix", "")
    found: list[dict] = []
    for subject in registry.subjects(prefix, call.flag("deleted")):
        if not _allowed(call, subject):
            continue
        versions = registry.state.versions(subject, call.flag("deleted"))
        found.extend(version_json(record, registry) for record in
                     (versions[-1:] if call.flag("latestOnly") else versions))
    offset, limit = _int_arg(call, "offset", 0), _int_arg(call, "limit", -1)
    return found[offset:] if limit < 0 else found[offset:offset + limit]


def _int_arg(call: Call, name: str, default: int) -> int:
    try:
        return int(call.request.query.get(name, default))
    except ValueError:
        raise RegistryError(400, f"{name} must be an integer") from None


def _allowed(call: Call, subject: str) -> bool:
    try:
        call.authorize(AclOperation.DESCRIBE, subject)
    except RegistryError:
        return False
    return True


# -- subjects -----------------------------------------------------------------

@_route("GET", "/subjects")
async def subjects(call: Call) -> Any:
    names = call.service.registry.subjects(call.request.query.get("subjectPrefix", ""), call.flag("deleted"),
                                           call.flag("deletedOnly"))
    return [name for name in names if _allowed(call, name)]


@_route("POST", "/subjects/{}")
async def lookup(call: Call) -> Any:
    subject = call.params[0]
    call.authorize(AclOperation.DESCRIBE, subject)
    body = call.json_body()
    record = await _sync_if_missing(call, lambda: call.service.registry.lookup(
        subject, body, call.flag("normalize"), call.flag("deleted")))
    return version_json(record, call.service.registry)


@_route("DELETE", "/subjects/{}", writes=True)
async def delete_subject(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    return await call.service.registry.delete_subject(call.params[0], call.flag("permanent"))


@_route("GET", "/subjects/{}/versions")
async def subject_versions(call: Call) -> Any:
    call.authorize(AclOperation.DESCRIBE, call.params[0])
    return await _sync_if_missing(call, lambda: call.service.registry.subject_versions(
        call.params[0], call.flag("deleted"), call.flag("deletedOnly")))


@_route("POST", "/subjects/{}/versions", writes=True)
async def register(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    record = await call.service.registry.register(call.params[0], call.json_body(), call.flag("normalize"))
    return {"id": record.schema_id}


@_route("GET", "/subjects/{}/versions/{}")
async def get_version(call: Call) -> Any:
    record = await _requested_version(call, call.flag("deleted"))
    return version_json(record, call.service.registry, call.request.query.get("format"))


@_route("GET", "/subjects/{}/versions/{}/schema")
async def get_raw_version(call: Call) -> Any:
    record = await _requested_version(call, call.flag("deleted"))
    return _raw(record, call.service.registry, call.request.query.get("format"))


async def _requested_version(call: Call, deleted: bool = False) -> SchemaRecord:
    """The subject's version the path names, once DESCRIBE on the subject is allowed."""
    subject, version = call.params
    call.authorize(AclOperation.DESCRIBE, subject)
    return await _sync_if_missing(call, lambda: call.service.registry.get_version(subject, version, deleted))


@_route("GET", "/subjects/{}/versions/{}/referencedby")
async def referenced_by(call: Call) -> Any:
    record = await _requested_version(call)
    return sorted({found.schema_id for found in call.service.registry.state.referenced_by(
        record.subject, record.version, call.flag("deleted"))})


@_route("DELETE", "/subjects/{}/versions/{}", writes=True)
async def delete_version(call: Call) -> Any:
    subject, version = call.params
    call.authorize(AclOperation.WRITE, subject)
    return await call.service.registry.delete_version(subject, version, call.flag("permanent"))


# -- compatibility ------------------------------------------------------------

@_route("POST", "/compatibility/subjects/{}/versions/{}")
async def compatibility_with_version(call: Call) -> Any:
    subject, version = call.params
    call.authorize(AclOperation.DESCRIBE, subject)
    body = call.json_body()
    found = await _sync_if_missing(call, lambda: call.service.registry.compatibility_check(
        subject, version, body, call.flag("normalize")))
    return _compatibility(call, found)


@_route("POST", "/compatibility/subjects/{}/versions")
async def compatibility_with_subject(call: Call) -> Any:
    subject = call.params[0]
    call.authorize(AclOperation.DESCRIBE, subject)
    found = call.service.registry.compatibility_check(subject, None, call.json_body(), call.flag("normalize"))
    return _compatibility(call, found)


def _compatibility(call: Call, found: list[str]) -> dict:
    answer: dict[str, Any] = {"is_compatible": not found}
    if call.flag("verbose"):
        answer["messages"] = found
    return answer


# -- config and mode ----------------------------------------------------------

@_route("GET", "/config")
async def get_global_config(call: Call) -> Any:
    return {"compatibilityLevel": call.service.registry.state.compatibility(None)}


@_route("PUT", "/config", writes=True)
async def put_global_config(call: Call) -> Any:
    call.authorize(AclOperation.ALTER_CONFIGS, None)
    return {"compatibility": await call.service.registry.set_compatibility(None, call.json_body())}


@_route("DELETE", "/config", writes=True)
async def delete_global_config(call: Call) -> Any:
    call.authorize(AclOperation.ALTER_CONFIGS, None)
    return {"compatibilityLevel": await call.service.registry.delete_compatibility(None)}


@_route("GET", "/config/{}")
async def get_config(call: Call) -> Any:
    state = call.service.registry.state
    level = _subject_setting(call, state.configs, state.compatibility, errors.SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                             "compatibility")
    return {"compatibilityLevel": level}


def _subject_setting(call: Call, settings: dict[str | None, str], default: Callable[[None], str], code: int,
                     what: str) -> str:
    """A subject's own compatibility or mode; the global one with
    ``defaultToGlobal=true``, else 4040x when it has none."""
    subject = call.params[0]
    call.authorize(AclOperation.DESCRIBE, subject)
    value = settings.get(subject)
    if value is not None:
        return value
    if not call.flag("defaultToGlobal"):
        raise RegistryError(code, f"Subject '{subject}' does not have subject-level {what} configured")
    return default(None)


@_route("PUT", "/config/{}", writes=True)
async def put_config(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    return {"compatibility": await call.service.registry.set_compatibility(call.params[0], call.json_body())}


@_route("DELETE", "/config/{}", writes=True)
async def delete_config(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    return {"compatibilityLevel": await call.service.registry.delete_compatibility(call.params[0])}


@_route("GET", "/mode")
async def get_global_mode(call: Call) -> Any:
    return {"mode": call.service.registry.state.mode(None)}


@_route("PUT", "/mode", writes=True)
async def put_global_mode(call: Call) -> Any:
    call.authorize(AclOperation.ALTER_CONFIGS, None)
    return {"mode": await call.service.registry.set_mode(None, call.json_body(), call.flag("force"))}


@_route("GET", "/mode/{}")
async def get_mode(call: Call) -> Any:
    state = call.service.registry.state
    return {"mode": _subject_setting(call, state.modes, state.mode, errors.SUBJECT_MODE_NOT_CONFIGURED, "mode")}


@_route("PUT", "/mode/{}", writes=True)
async def put_mode(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    return {"mode": await call.service.registry.set_mode(call.params[0], call.json_body(), call.flag("force"))}


@_route("DELETE", "/mode/{}", writes=True)
async def delete_mode(call: Call) -> Any:
    call.authorize(AclOperation.WRITE, call.params[0])
    return {"mode": await call.service.registry.delete_mode(call.params[0])}


# -- kcore's own: the ACLs of subjects ----------------------------------------

_ACL_OPERATIONS = {op.name: op for op in SUPPORTED_OPERATIONS[ResourceType.SUBJECT] + (AclOperation.ALL,)}


def _acl_json(binding: AclBinding) -> dict:
    return {"subject": binding.resource_name, "patternType": binding.pattern_type.name,
            "principal": binding.principal, "host": binding.host, "operation": binding.operation.name,
            "permission": binding.permission.name}


def _bindings(call: Call) -> list[AclBinding]:
    """The body's ``{"acls": [{"subject", "patternType", "principal", "host",
    "operation", "permission"}]}`` as bindings on the Subject resource."""
    body = call.json_body()
    items = body.get("acls") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        raise RegistryError(400, 'send {"acls": [{"subject": ..., "principal": ..., "operation": ...}]}')
    found = []
    for item in items:
        try:
            binding = AclBinding(ResourceType.SUBJECT, str(item["subject"]),
                                 PatternType[str(item.get("patternType", "LITERAL")).upper()],
                                 str(item["principal"]), str(item.get("host", "*")),
                                 _ACL_OPERATIONS[str(item["operation"]).upper()],
                                 AclPermissionType[str(item.get("permission", "ALLOW")).upper()])
            validate_binding(binding)
        except (KeyError, TypeError, AttributeError, AclError) as exc:
            raise RegistryError(400, f"not a Subject ACL: {item!r} ({exc}); operation is one of "
                                     f"{', '.join(sorted(_ACL_OPERATIONS))}") from None
        found.append(binding)
    return found


def _acl_store(call: Call) -> SubjectAcls:
    acls = call.service.acls
    if acls is None or acls.current() is None:
        raise RegistryError(errors.OPERATION_NOT_PERMITTED, "No authorizer is configured on the broker "
                                                            "(authorizer.class.name)")
    return acls


@_route("GET", "/acls")
async def list_acls(call: Call) -> Any:
    call.authorize(AclOperation.DESCRIBE, None)
    current = _acl_store(call).current() or frozenset()
    subject = call.request.query.get("subject")
    return [_acl_json(binding) for binding in sorted(current) if binding.resource_type == ResourceType.SUBJECT
            and (subject is None or binding.resource_name == subject)]


@_route("POST", "/acls")
async def add_acls(call: Call) -> Any:
    call.authorize(AclOperation.ALTER, None)
    added = _bindings(call)
    await _acl_store(call).change(added, [])
    return [_acl_json(binding) for binding in added]


@_route("DELETE", "/acls")
async def remove_acls(call: Call) -> Any:
    call.authorize(AclOperation.ALTER, None)
    store = _acl_store(call)
    removed = [binding for binding in _bindings(call) if binding in (store.current() or frozenset())]
    await store.change([], removed)
    return [_acl_json(binding) for binding in removed]

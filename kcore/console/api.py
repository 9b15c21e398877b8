"""The console's JSON endpoints: a route table of (method, path pattern,
endpoint) and ``dispatch``, which the HTTP listener calls on the event loop.

Every answer is JSON. Errors: the caller's (unknown topic or group, an
offset out of range, a malformed body) are 4xx with
``{"error": NAME, "message": ...}``; anything unexpected is logged and
answered 500 the same way, never raised into the broker. Each call runs
under ``API_TIMEOUT_S``.

    GET    /api/overview                                      brokers, version, uptime, counts, rates
    GET    /api/throughput                                    bytes/messages per second, last 5 min
    GET    /api/topics                                        list
    POST   /api/topics                                        {"name", "partitions"?, "replication_factor"?, "configs"?}
    GET    /api/topics/T                                      partitions, offsets, segments, configs
    DELETE /api/topics/T
    PUT    /api/topics/T/configs                              {"set": {k: v}, "delete": [k]}
    POST   /api/topics/T/delete-records                       {"offset", "partitions"?}
    GET    /api/topics/T/partitions/P/messages?offset=|timestamp=&limit=
    GET    /api/topics/T/partitions/P/search?q=&in=key|value|both&offset=&max_records=
    GET    /api/groups                                        list
    GET    /api/groups/G                                      members, offsets, lag, lag history
    POST   /api/groups/G/reset-offsets                        {"topic", "strategy", "value"?, "partitions"?, "execute"?}
    GET    /api/share-groups                                  share groups: members, in flight, lag
    GET    /api/schemas                                       schema registry subjects, latest versions
    GET    /api/schemas/S                                     a subject's versions with their schema text
    GET    /api/schemas/S/diff?from=&to=                      unified diff of two versions

With an authorizer (``authorizer.class.name``), a call on a topic or a
group is authorized as Kafka would authorize the request that does the
same (CreateTopics, DeleteTopics, AlterConfigs, DeleteRecords, Fetch,
OffsetCommit, Metadata, DescribeGroups), for ``User:ANONYMOUS`` at the caller's address:
the HTTP listener authenticates nobody, so the console may do what an
unauthenticated Kafka client may. A refusal is 403 with Kafka's error name.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from kcore.console import groups, messages, overview, records, schemas, share_groups, topics
from kcore.console.base import ApiError, ApiRequest, ConsoleSource
from kcore.log.errors import LogError, OffsetOutOfRangeError
from kcore.protocol.records import CorruptBatchError
from kcore.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

# A console call answers within this or gives up (504): a topic creation
# waits up to 10 s for its leaders, everything else takes milliseconds.
API_TIMEOUT_S = 15.0

_NAME = r"(?P<{}>[^/]+)"
Endpoint = Callable[[ConsoleSource, ApiRequest], Any]


def _route(method: str, pattern: str, endpoint: Endpoint) -> tuple[str, re.Pattern, Endpoint]:
    regex = re.sub(r"\{(\w+)\}", lambda m: _NAME.format(m.group(1)), pattern)
    return method, re.compile(regex), endpoint


ROUTES = [
    _route("GET", "/api/overview", overview.overview),
    _route("GET", "/api/throughput", overview.throughput),
    _route("GET", "/api/topics", topics.list_topics),
    _route("POST", "/api/topics", topics.create),
    _route("GET", "/api/topics/{topic}", topics.describe_topic),
    _route("DELETE", "/api/topics/{topic}", topics.delete),
    _route("PUT", "/api/topics/{topic}/configs", topics.alter_configs),
    _route("POST", "/api/topics/{topic}/delete-records", records.delete_topic_records),
    _route("GET", "/api/topics/{topic}/partitions/{partition}/messages", messages.browse),
    _route("GET", "/api/topics/{topic}/partitions/{partition}/search", messages.search),
    _route("GET", "/api/groups", groups.list_groups),
    _route("GET", "/api/groups/{group}", groups.describe_group),
    _route("POST", "/api/groups/{group}/reset-offsets", groups.reset_offsets),
    _route("GET", "/api/share-groups", share_groups.list_share_groups),
    _route("GET", "/api/schemas", schemas.list_subjects),
    _route("GET", "/api/schemas/{subject}", schemas.describe_subject),
    _route("GET", "/api/schemas/{subject}/diff", schemas.diff_versions),
]


# (method, route pattern) -> (operation, resource type, path parameter
# naming the resource): what Kafka checks for the request doing the same.
NEEDS: dict[tuple[str, str], tuple[AclOperation, ResourceType, str]] = {
    ("GET", "/api/topics/{topic}"): (AclOperation.DESCRIBE, ResourceType.TOPIC, "topic"),
    ("DELETE", "/api/topics/{topic}"): (AclOperation.DELETE, ResourceType.TOPIC, "topic"),
    ("PUT", "/api/topics/{topic}/configs"): (AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, "topic"),
    ("POST", "/api/topics/{topic}/delete-records"): (AclOperation.DELETE, ResourceType.TOPIC, "topic"),
    ("GET", "/api/topics/{topic}/partitions/{partition}/messages"):
        (AclOperation.READ, ResourceType.TOPIC, "topic"),
    ("GET", "/api/topics/{topic}/partitions/{partition}/search"):
        (AclOperation.READ, ResourceType.TOPIC, "topic"),
    ("GET", "/api/groups/{group}"): (AclOperation.DESCRIBE, ResourceType.GROUP, "group"),
    ("POST", "/api/groups/{group}/reset-offsets"): (AclOperation.READ, ResourceType.GROUP, "group"),
    # As the registry's GET /subjects/{subject}/versions checks.
    ("GET", "/api/schemas/{subject}"): (AclOperation.DESCRIBE, ResourceType.SUBJECT, "subject"),
    ("GET", "/api/schemas/{subject}/diff"): (AclOperation.DESCRIBE, ResourceType.SUBJECT, "subject"),
}
CONSOLE_PRINCIPAL = "User:ANONYMOUS"
_AUTHORIZATION_FAILED = {ResourceType.TOPIC: "TOPIC_AUTHORIZATION_FAILED",
                         ResourceType.GROUP: "GROUP_AUTHORIZATION_FAILED",
                         ResourceType.CLUSTER: "CLUSTER_AUTHORIZATION_FAILED",
                         ResourceType.SUBJECT: "SUBJECT_AUTHORIZATION_FAILED"}
_CHECKS = [(method, _route(method, pattern, lambda *_: None)[1], need)
           for (method, pattern), need in NEEDS.items()]


def _authorize(broker: ConsoleSource, host: str, method: str, path: str,
               params: dict[str, str], body: Any) -> None:
    """Raise 403 where Kafka would refuse the same request."""
    authorizer = broker.authorizer
    if authorizer is None:
        return
    checks = [(op, kind, params[param]) for route_method, regex, (op, kind, param) in _CHECKS
              if route_method == method and regex.fullmatch(path)]
    if method == "POST" and path == "/api/topics":  # CREATE on the cluster or on the topic
        name = body.get("name") if isinstance(body, dict) else None
        if authorizer.authorize(CONSOLE_PRINCIPAL, host, AclOperation.CREATE, ResourceType.CLUSTER,
                                "kafka-cluster"):
            return
        checks.append((AclOperation.CREATE, ResourceType.TOPIC, str(name)))
    if method == "POST" and path.endswith("/reset-offsets") and isinstance(body, dict):
        checks.append((AclOperation.READ, ResourceType.TOPIC, str(body.get("topic"))))
    for op, kind, name in checks:
        if not authorizer.authorize(CONSOLE_PRINCIPAL, host, op, kind, name):
            raise ApiError(403, _AUTHORIZATION_FAILED[kind],
                           f"{CONSOLE_PRINCIPAL} from {host or 'this address'} may not "
                           f"{op.name} {kind.name.lower()} {name!r}")


# List endpoint -> (its key, each item's name key, the resource type):
# like Metadata and ListGroups, a list shows only what the caller may
# DESCRIBE.
_LISTS = {"/api/topics": ("topics", "name", ResourceType.TOPIC),
          "/api/groups": ("groups", "group_id", ResourceType.GROUP),
          "/api/share-groups": ("groups", "group_id", ResourceType.GROUP),
          "/api/schemas": ("subjects", "subject", ResourceType.SUBJECT)}


def _describable(broker: ConsoleSource, host: str, path: str, result: dict) -> dict:
    authorizer = broker.authorizer
    if authorizer is None:
        return result
    key, name_key, kind = _LISTS[path]
    result[key] = [item for item in result[key] if authorizer.authorize(
        CONSOLE_PRINCIPAL, host, AclOperation.DESCRIBE, kind, item[name_key])]
    for item in result[key] if path == "/api/topics" else []:  # the Schema column: subjects described alone
        item["schemas"] = {part: found if found is not None and authorizer.authorize(
            CONSOLE_PRINCIPAL, host, AclOperation.DESCRIBE, ResourceType.SUBJECT, found["subject"]) else None
            for part, found in item["schemas"].items()}
    return result


def _find(method: str, path: str) -> tuple[Endpoint, dict[str, str]]:
    allowed = False
    for route_method, regex, endpoint in ROUTES:
        match = regex.fullmatch(path)
        if match is None:
            continue
        if route_method == method:
            return endpoint, {k: unquote(v) for k, v in match.groupdict().items()}
        allowed = True
    if allowed:
        raise ApiError(405, "METHOD_NOT_ALLOWED", f"{method} is not served on {path}")
    raise ApiError(404, "NOT_FOUND", f"no console endpoint {path}")


def _decode_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "INVALID_REQUEST", f"malformed JSON body: {exc}") from None


async def dispatch(broker: ConsoleSource, method: str, path: str, query: dict[str, str],
                   body: bytes, host: str = "") -> tuple[int, bytes]:
    """(HTTP status, JSON bytes) for one console call from ``host``."""
    try:
        endpoint, params = _find(method, path)
        request = ApiRequest(params, query, _decode_body(body) if method in ("POST", "PUT") else None)
        _authorize(broker, host, method, path, params, request.body)
        result = endpoint(broker, request)
        if inspect.isawaitable(result):
            result = await asyncio.wait_for(result, API_TIMEOUT_S)
        if method == "GET" and path in _LISTS:
            result = _describable(broker, host, path, result)
        return 200, _json(result)
    except ApiError as exc:
        return exc.status, _json({"error": exc.error, "message": exc.message})
    except OffsetOutOfRangeError as exc:  # retention moved the log start during the call
        return 400, _json({"error": "OFFSET_OUT_OF_RANGE", "message": str(exc)})
    except (LogError, CorruptBatchError, OSError) as exc:
        log.warning("console %s %s: cannot read the log: %s", method, path, exc)
        return 500, _json({"error": "KAFKA_STORAGE_ERROR", "message": str(exc)})
    except TimeoutError:
        return 504, _json({"error": "REQUEST_TIMED_OUT", "message": f"no answer within {API_TIMEOUT_S:.0f} s"})
    except Exception as exc:
        log.exception("console %s %s failed", method, path)
        return 500, _json({"error": "UNKNOWN_SERVER_ERROR", "message": f"{type(exc).__name__}: {exc}"})


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()

"""`kcore schemas`: the schema registry's subjects, versions and
compatibility from the command line, over its REST API (Confluent's, so
it works against any broker's ``schema.registry.listeners`` or
Confluent's own registry).

    kcore schemas list [--deleted] [--prefix P]
    kcore schemas get SUBJECT [--version V] | kcore schemas get --id N
    kcore schemas register SUBJECT FILE [--type AVRO|JSON|PROTOBUF] [--reference NAME=SUBJECT:VERSION ...]
    kcore schemas delete SUBJECT [--version V] [--permanent]
    kcore schemas compatibility SUBJECT FILE [--version V] [--type T]
    kcore schemas acls list [--subject S]
    kcore schemas acls add|remove --subject S --principal User:P --operation DESCRIBE|WRITE|ALL
                                  [--pattern-type LITERAL|PREFIXED] [--permission ALLOW|DENY] [--host H]

FILE ``-`` reads stdin. ``--registry-url`` (default Confluent's
http://127.0.0.1:8081) picks the registry, ``--user`` and ``--password``
(or ``$KCORE_REGISTRY_PASSWORD``) log in with HTTP basic auth. The
registry's errors print Confluent's error_code and message and exit 1;
``compatibility`` exits 1 when the schema is incompatible.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kcore.cli.groups import _print_table

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
DEFAULT_URL = "http://127.0.0.1:8081"
TIMEOUT_S = 30


class RegistryCallError(Exception):
    def __init__(self, status: int, error_code: int, message: str):
        super().__init__(f"{status} error_code {error_code}: {message}")


def _call(args, method: str, path: str, body: Any = None) -> Any:
    """The decoded JSON answer of one request; RegistryCallError for an
    error answer (Confluent's ``{"error_code", "message"}`` body)."""
    headers = {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
    password = args.password if args.password is not None else os.environ.get("KCORE_REGISTRY_PASSWORD")
    if args.user:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{args.user}:{password or ''}".encode()).decode()
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(args.registry_url.rstrip("/") + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        payload = error.read()
        try:
            decoded = json.loads(payload)
            raise RegistryCallError(error.code, decoded["error_code"], decoded["message"]) from None
        except (ValueError, KeyError, TypeError):
            raise RegistryCallError(error.code, error.code, payload.decode(errors="replace")) from None


def _subject(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def add_parser(commands) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--registry-url", default=DEFAULT_URL, help=f"the registry's URL (default {DEFAULT_URL})")
    common.add_argument("--user", help="HTTP basic auth user (a SCRAM or PLAIN user of the broker)")
    common.add_argument("--password", help="its password (default: $KCORE_REGISTRY_PASSWORD)")
    parser = commands.add_parser("schemas", help="list, get, register and delete schemas; check compatibility")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="subjects and their versions")
    listing.add_argument("--deleted", action="store_true", help="include soft-deleted subjects and versions")
    listing.add_argument("--prefix", default="", help="only subjects starting with this")
    listing.set_defaults(run=run_list)
    get = actions.add_parser("get", parents=[common], help="a subject's version, or a schema by id")
    get.add_argument("subject", nargs="?")
    get.add_argument("--version", default="latest")
    get.add_argument("--id", type=int, help="the schema of this id (no subject)")
    get.set_defaults(run=run_get)
    register = actions.add_parser("register", parents=[common], help="register a schema under a subject")
    _schema_arguments(register)
    register.set_defaults(run=run_register)
    delete = actions.add_parser("delete", parents=[common], help="delete a subject or one of its versions")
    delete.add_argument("subject")
    delete.add_argument("--version", help="only this version (default: the whole subject)")
    delete.add_argument("--permanent", action="store_true", help="a hard delete (after a soft one)")
    delete.set_defaults(run=run_delete)
    compatibility = actions.add_parser("compatibility", parents=[common],
                                       help="whether a schema is compatible with a subject's version(s)")
    _schema_arguments(compatibility)
    compatibility.add_argument("--version", default="latest", help="the version to check against, or 'all'")
    compatibility.set_defaults(run=run_compatibility)
    _acl_parsers(actions, common)


def _acl_parsers(actions, common: argparse.ArgumentParser) -> None:
    parser = actions.add_parser("acls", help="the Subject ACLs the registry checks (its /acls routes)")
    parser.set_defaults(run=lambda args: parser.print_help() or 2)
    acl_actions = parser.add_subparsers(dest="acl_action", required=True)
    listing = acl_actions.add_parser("list", parents=[common], help="Subject ACLs")
    listing.add_argument("--subject", help="only the ACLs of this resource name")
    listing.set_defaults(run=run_acls_list)
    for name, method in (("add", "POST"), ("remove", "DELETE")):
        change = acl_actions.add_parser(name, parents=[common], help=f"{name} a Subject ACL")
        change.add_argument("--subject", required=True, help="the subject, or a prefix with --pattern-type PREFIXED")
        change.add_argument("--pattern-type", default="LITERAL", choices=["LITERAL", "PREFIXED"])
        change.add_argument("--principal", required=True, help="User:NAME")
        change.add_argument("--operation", required=True, choices=["DESCRIBE", "WRITE", "ALL"])
        change.add_argument("--permission", default="ALLOW", choices=["ALLOW", "DENY"])
        change.add_argument("--host", default="*")
        change.set_defaults(run=run_acls_change, method=method)


def _schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subject")
    parser.add_argument("file", help="the schema's text, '-' for stdin")
    parser.add_argument("--type", default="AVRO", choices=["AVRO", "JSON", "PROTOBUF"])
    parser.add_argument("--reference", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                        help="a schema it references (repeatable)")


def _schema_body(args) -> dict[str, Any]:
    text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    body: dict[str, Any] = {"schema": text}
    if args.type != "AVRO":
        body["schemaType"] = args.type
    references = []
    for reference in args.reference:
        name, _, target = reference.partition("=")
        subject, _, version = target.rpartition(":")
        if not name or not subject or not version.isdigit():
            raise ValueError(f"--reference {reference!r}: expected NAME=SUBJECT:VERSION")
        references.append({"name": name, "subject": subject, "version": int(version)})
    if references:
        body["references"] = references
    return body


def _guarded(action):
    """Run ``action(args)``, printing the registry's or the input's error."""
    def run(args) -> int:
        try:
            return action(args)
        except RegistryCallError as exc:
            print(f"Error: {exc}", file=sys.stderr)
        except (OSError, ValueError) as exc:
            print(f"Error: {exc}", file=sys.stderr)
        return 1
    return run


@_guarded
def run_list(args) -> int:
    deleted = "?deleted=true" if args.deleted else ""
    subjects = [s for s in _call(args, "GET", f"/subjects{deleted}") if s.startswith(args.prefix)]
    rows = [(subject, ",".join(map(str, _call(args, "GET", f"/subjects/{_subject(subject)}/versions{deleted}"))))
            for subject in sorted(subjects)]
    _print_table([("SUBJECT", "VERSIONS")] + rows)
    return 0


@_guarded
def run_get(args) -> int:
    if args.id is not None:
        found = _call(args, "GET", f"/schemas/ids/{args.id}")
        found = {"id": args.id, **found}
    elif args.subject:
        found = _call(args, "GET", f"/subjects/{_subject(args.subject)}/versions/{_subject(args.version)}")
    else:
        raise ValueError("name a subject or --id")
    print(json.dumps(found, indent=2))
    return 0


@_guarded
def run_register(args) -> int:
    answer = _call(args, "POST", f"/subjects/{_subject(args.subject)}/versions", _schema_body(args))
    print(f"Registered under {args.subject}: id {answer['id']}")
    return 0


@_guarded
def run_delete(args) -> int:
    query = "?permanent=true" if args.permanent else ""
    path = f"/subjects/{_subject(args.subject)}"
    if args.version:
        path += f"/versions/{_subject(args.version)}"
    answer = _call(args, "DELETE", path + query)
    versions = answer if isinstance(answer, list) else [answer]
    kind = "Permanently deleted" if args.permanent else "Deleted"
    print(f"{kind} {args.subject} version(s) {', '.join(map(str, versions))}")
    return 0


@_guarded
def run_compatibility(args) -> int:
    versions = "versions" if args.version == "all" else f"versions/{_subject(args.version)}"
    answer = _call(args, "POST", f"/compatibility/subjects/{_subject(args.subject)}/{versions}?verbose=true",
                   _schema_body(args))
    compatible = bool(answer.get("is_compatible"))
    print("compatible" if compatible else "incompatible")
    for message in answer.get("messages") or []:
        print(f"  {message}")
    return 0 if compatible else 1


def _acl_rows(acls: list[dict[str, str]]) -> list[tuple[str, ...]]:
    header: tuple[str, ...] = ("SUBJECT", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION")
    return [header] + [
        (acl["subject"], acl["patternType"], acl["principal"], acl["host"], acl["operation"], acl["permission"])
        for acl in acls]


@_guarded
def run_acls_list(args) -> int:
    query = f"?subject={urllib.parse.quote(args.subject, safe='')}" if args.subject else ""
    _print_table(_acl_rows(_call(args, "GET", f"/acls{query}")))
    return 0


@_guarded
def run_acls_change(args) -> int:
    acl = {"subject": args.subject, "patternType": args.pattern_type, "principal": args.principal,
           "host": args.host, "operation": args.operation, "permission": args.permission}
    changed = _call(args, args.method, "/acls", {"acls": [acl]})
    print(f"{'Added' if args.method == 'POST' else 'Removed'} {len(changed)} ACL(s)")
    if changed:
        _print_table(_acl_rows(changed))
    return 0

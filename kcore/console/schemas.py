"""The schema registry's pages of the console: subjects with their
versions, one subject's versions with their schema text, the diff between
two versions, and the subjects of a topic (TopicNameStrategy) for the
Schema column of the topics page.

Read from the registry as this broker has replayed ``_schemas`` (every
broker holds all of it), so the pages need no registry listener and show
what ``GET /subjects`` would answer; the console only reads, changes go
through the registry's REST API or ``kcore schemas``.
"""
from __future__ import annotations

import difflib
import json

from kcore.console.base import ApiError, ApiRequest, ConsoleSource, int_arg
from kcore.schema_registry.records import SchemaRecord

# Subjects listed at most (~150 bytes each); a registry with more is
# browsed by name.
MAX_SUBJECTS_LISTED = 5000
# Versions of one subject shown with their text (each up to the registry's
# body bound): the newest ones.
MAX_VERSIONS_SHOWN = 100


def _pretty(record: SchemaRecord) -> str:
    """The schema text as the page shows it: JSON (Avro, JSON Schema)
    indented, .proto as registered."""
    try:
        return json.dumps(json.loads(record.schema), indent=2, sort_keys=False)
    except ValueError:
        return record.schema


def _summary(record: SchemaRecord) -> dict:
    return {"version": record.version, "id": record.schema_id, "type": record.schema_type,
            "deleted": record.deleted}


def list_subjects(broker: ConsoleSource, request: ApiRequest) -> dict:
    state = broker.schemas.state
    names = state.subject_names()
    subjects = []
    for name in names[:MAX_SUBJECTS_LISTED]:
        versions = state.versions(name)
        subjects.append({"subject": name, "versions": [v.version for v in versions],
                         "latest": _summary(versions[-1]), "compatibility": state.compatibility(name)})
    return {"subjects": subjects, "truncated": len(names) > MAX_SUBJECTS_LISTED,
            "compatibility": state.compatibility(None), "mode": state.mode(None)}


def describe_subject(broker: ConsoleSource, request: ApiRequest) -> dict:
    subject = request.params["subject"]
    state = broker.schemas.state
    versions = state.versions(subject, deleted=True)
    if not versions:
        raise ApiError(404, "SUBJECT_NOT_FOUND", f"subject {subject!r} does not exist")
    shown = versions[-MAX_VERSIONS_SHOWN:]
    return {"subject": subject, "compatibility": state.compatibility(subject), "mode": state.mode(subject),
            "versions": [{**_summary(v), "schema": _pretty(v),
                          "references": [r.to_json() for r in v.references]} for v in shown],
            "truncated": len(versions) > len(shown)}


def diff_versions(broker: ConsoleSource, request: ApiRequest) -> dict:
    """A unified diff of two versions' (pretty) schema text: ``from``
    (default the one before ``to``) and ``to`` (default the latest)."""
    subject = request.params["subject"]
    by_version = {v.version: v for v in broker.schemas.state.versions(subject, deleted=True)}
    if not by_version:
        raise ApiError(404, "SUBJECT_NOT_FOUND", f"subject {subject!r} does not exist")
    latest = max(by_version)
    to = int_arg(request.query, "to", latest, 1) or latest
    before = max(to - 1, min(by_version))
    start = int_arg(request.query, "from", before, 1) or before
    for version in (start, to):
        if version not in by_version:
            raise ApiError(404, "VERSION_NOT_FOUND", f"subject {subject!r} has no version {version}")
    lines = difflib.unified_diff(_pretty(by_version[start]).splitlines(), _pretty(by_version[to]).splitlines(),
                                 f"version {start}", f"version {to}", lineterm="")
    return {"subject": subject, "from": start, "to": to, "diff": list(lines)}


def topic_schemas(broker: ConsoleSource, topic: str) -> dict:
    """The latest (version, id) of ``<topic>-key`` and ``<topic>-value``
    (None for a subject that does not exist), for the topics page."""
    state = broker.schemas.state
    found: dict = {}
    for part in ("key", "value"):
        versions = state.versions(f"{topic}-{part}")
        found[part] = None if not versions else {"subject": f"{topic}-{part}", "version": versions[-1].version,
                                                 "id": versions[-1].schema_id}
    return found

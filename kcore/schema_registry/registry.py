"""What the registry does, as Confluent's ``KafkaSchemaRegistry`` does it:
register, look up, check compatibility, delete (soft, then permanently),
and the compatibility and mode settings.

Reads answer from the replayed state (state.py). Writes run on the
primary only (the leader of ``_schemas``' partition), one at a time under
``_write_lock``: the state is caught up with the log first, the records
are computed against it and appended as one batch, and the state then
reads them back from the log, so an id or version is handed out once.

- A schema already registered under the subject (same type, canonical
  text and references) gets its id and version back, nothing written.
- A schema registered under another subject keeps its id there; a new
  one gets the highest id seen plus one.
- A new version is checked against the subject's live versions as its
  compatibility level says (the latest only, or every one for the
  ``_TRANSITIVE`` levels) and refused with 40901 and the reasons.
- Deletes are soft first (the version stays readable with
  ``deleted=true`` and keeps its id); only a soft-deleted version or
  subject can be deleted permanently (a tombstone), and not while another
  schema refers to it (42206).

Not thread-safe: the broker's event loop owns it.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kcore.schema_registry import errors, records, schema_types
from kcore.schema_registry.errors import RegistryError
from kcore.schema_registry.records import Reference, SchemaRecord
from kcore.schema_registry.schema_types import ParsedSchema, ResolvedReference
from kcore.schema_registry.state import DEFAULT_COMPATIBILITY, DEFAULT_MODE, Fingerprint, RegistryState

COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1
# Parsed schemas kept; registries hold thousands, each parse is ~0.1-1 ms.
PARSED_CACHE_SIZE = 4096
# A reference chain deeper than this is refused rather than followed.
MAX_REFERENCE_DEPTH = 32

Entries = list[tuple[bytes, bytes | None]]
Append = Callable[[Entries], Awaitable[None]]


class SchemaRegistry:
    def __init__(self, state: Callable[[], RegistryState], append: Append):
        self._state = state
        self._append = append
        self._write_lock = asyncio.Lock()
        self._parsed: dict[Fingerprint, ParsedSchema] = {}

    @property
    def state(self) -> RegistryState:
        return self._state()

    # -- parsing ------------------------------------------------------------
    def parse(self, schema_type: str, text: str, references: tuple[Reference, ...]) -> ParsedSchema:
        fingerprint = Fingerprint(schema_type, text, references)
        parsed = self._parsed.get(fingerprint)
        if parsed is None:
            parsed = schema_types.parse(schema_type, text, self.resolve(references))
            if len(self._parsed) >= PARSED_CACHE_SIZE:
                self._parsed.clear()
            self._parsed[fingerprint] = parsed
        return parsed

    def parse_record(self, record: SchemaRecord) -> ParsedSchema:
        return self.parse(record.schema_type, record.schema, record.references)

    def resolve(self, references: tuple[Reference, ...], depth: int = 0) -> list[ResolvedReference]:
        """Each reference and, before it, what it refers to, once each."""
        if depth > MAX_REFERENCE_DEPTH:
            raise errors.invalid_schema("references nest too deep")
        resolved: dict[str, ResolvedReference] = {}
        for reference in references:
            record = self._version(reference.subject, reference.version, deleted=True)
            if record is None:
                raise errors.invalid_schema(f"the reference {reference.name!r} names subject "
                                            f"{reference.subject!r} version {reference.version}, which "
                                            f"does not exist")
            for item in self.resolve(record.references, depth + 1):
                resolved.setdefault(item.name, item)
            resolved.setdefault(reference.name, ResolvedReference(reference.name, record.schema_type,
                                                                  record.schema))
        return list(resolved.values())

    # -- reads --------------------------------------------------------------
    def _version(self, subject: str, version: int, deleted: bool = False) -> SchemaRecord | None:
        versions = self.state.versions(subject, deleted)
        if version == -1:
            return versions[-1] if versions else None
        return next((record for record in versions if record.version == version), None)

    def get_version(self, subject: str, version_text: str, deleted: bool = False) -> SchemaRecord:
        version = parse_version(version_text)
        if not self.state.versions(subject, deleted):
            raise errors.subject_not_found(subject)
        record = self._version(subject, version, deleted)
        if record is None:
            raise errors.version_not_found(version_text if version == -1 else version)
        return record

    def subject_versions(self, subject: str, deleted: bool = False, deleted_only: bool = False) -> list[int]:
        versions = self.state.versions(subject, deleted or deleted_only)
        if not versions:
            raise errors.subject_not_found(subject)
        return [record.version for record in versions if not deleted_only or record.deleted]

    def subjects(self, prefix: str = "", deleted: bool = False, deleted_only: bool = False) -> list[str]:
        names = self.state.subject_names(deleted or deleted_only)
        if deleted_only:
            names = [name for name in names if any(record.deleted for record in self.state.versions(name, True))]
        return [name for name in names if name.startswith(prefix)]

    def schema_by_id(self, schema_id: int) -> SchemaRecord:
        record = self.state.schema_by_id(schema_id)
        if record is None:
            raise errors.schema_not_found(schema_id)
        return record

    def lookup(self, subject: str, body: Any, normalize: bool, deleted: bool = False) -> SchemaRecord:
        """POST /subjects/{subject}: the version of the subject that holds this schema."""
        request = RegisterRequest.from_body(body)
        if not self.state.versions(subject, deleted=True):
            raise errors.subject_not_found(subject)
        found = self._existing(subject, request, normalize, deleted)
        if found is None:
            raise errors.schema_not_found()
        return found

    def _existing(self, subject: str, request: RegisterRequest, normalize: bool,
                  deleted: bool = False) -> SchemaRecord | None:
        parsed = self.parse(request.schema_type, request.schema, request.references)
        texts = {parsed.canonical, parsed.normalized()} if normalize else {parsed.canonical}
        for record in reversed(self.state.versions(subject, deleted)):
            if record.schema_type == request.schema_type and record.references == request.references:
                if record.schema in texts or (normalize and self.parse_record(record).normalized() in texts):
                    return record
        return None

    def compatibility_check(self, subject: str, version_text: str | None, body: Any,
                            normalize: bool = False) -> list[str]:
        """The incompatibilities of a candidate schema with one version
        (``version_text``) or, with None, the versions its level checks."""
        request = RegisterRequest.from_body(body)
        parsed = self.parse(request.schema_type, request.schema, request.references)
        level = self.state.compatibility(subject)
        if version_text is None:
            return self._incompatibilities(subject, parsed, level, self.state.versions(subject))
        previous = self.get_version(subject, version_text)
        return self._incompatibilities(subject, parsed, level.removesuffix("_TRANSITIVE"), [previous])

    def _incompatibilities(self, subject: str, parsed: ParsedSchema, level: str,
                           versions: list[SchemaRecord]) -> list[str]:
        if level == "NONE" or not versions:
            return []
        targets = versions if level.endswith("_TRANSITIVE") else versions[-1:]
        base = level.removesuffix("_TRANSITIVE")
        for previous in reversed(targets):
            old = self.parse_record(previous)
            found = []
            if base in ("BACKWARD", "FULL"):
                found += parsed.backward_errors(old)
            if base in ("FORWARD", "FULL"):
                found += old.backward_errors(parsed)
            if found:
                return found + [f"{{oldSchemaVersion: {previous.version}}}", f"{{oldSchema: '{previous.schema}'}}",
                                f"{{compatibility: '{level}'}}"]
        return []

    # -- writes -------------------------------------------------------------
    async def register(self, subject: str, body: Any, normalize: bool) -> SchemaRecord:
        check_subject(subject)
        request = RegisterRequest.from_body(body)
        async with self._write_lock:
            state = self.state
            mode = state.mode(subject)
            if mode in ("READONLY", "READONLY_OVERRIDE"):
                raise errors.read_only(subject)
            if request.schema_id is not None and mode != "IMPORT":
                raise RegistryError(errors.OPERATION_NOT_PERMITTED,
                                    f"Subject {subject} is not in import mode: a schema id is taken only then")
            parsed = self.parse(request.schema_type, request.schema, request.references)
            text = parsed.normalized() if normalize else parsed.canonical
            existing = self._existing(subject, request, normalize)
            if existing is not None and request.schema_id in (None, existing.schema_id):
                return existing
            if mode != "IMPORT":
                found = self._incompatibilities(subject, parsed, state.compatibility(subject),
                                                state.versions(subject))
                if found:
                    raise RegistryError(errors.INCOMPATIBLE_SCHEMA,
                                        f"Schema being registered is incompatible with an earlier schema for "
                                        f"subject \"{subject}\", details: [{', '.join(found)}]")
            fingerprint = Fingerprint(request.schema_type, text, request.references)
            schema_id = self._id_for(fingerprint, request.schema_id)
            all_versions = state.versions(subject, deleted=True)
            version = request.version or ((all_versions[-1].version + 1) if all_versions else 1)
            if request.version and any(record.version == version for record in all_versions):
                raise errors.invalid_version(str(request.version))
            record = SchemaRecord(subject, version, schema_id, text, request.schema_type, request.references)
            await self._append([(records.schema_key(subject, version), records.schema_value(record))])
            return record

    def _id_for(self, fingerprint: Fingerprint, wanted: int | None) -> int:
        state = self.state
        known = state.ids_by_fingerprint.get(fingerprint)
        if wanted is None:
            return known if known is not None else state.max_id + 1
        holder = state.schema_by_id(wanted)
        if holder is not None and Fingerprint.of(holder) != fingerprint:
            raise RegistryError(errors.ID_DOES_NOT_MATCH, f"Schema already registered with id {wanted} "
                                                          f"instead of input id {wanted}")
        return wanted

    async def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        async with self._write_lock:
            self._check_writable(subject)
            version = parse_version(version_text)
            if not self.state.versions(subject, deleted=True):
                raise errors.subject_not_found(subject)
            record = self._version(subject, version, deleted=permanent)
            if record is None:
                live = self._version(subject, version, deleted=True)
                if live is not None and live.deleted and not permanent:
                    raise RegistryError(errors.SCHEMA_VERSION_SOFT_DELETED,
                                        f"Subject '{subject}' Version {live.version} was soft deleted.Set "
                                        f"permanent=true to delete permanently")
                raise errors.version_not_found(version_text if version == -1 else version)
            if self.state.referenced_by(subject, record.version, deleted=permanent):
                raise RegistryError(errors.REFERENCE_EXISTS, f"One or more references exist to the schema "
                                                             f"{{subject={subject},version={record.version}}}")
            if permanent:
                if not record.deleted:
                    raise RegistryError(errors.SCHEMA_VERSION_NOT_SOFT_DELETED,
                                        f"Subject '{subject}' Version {record.version} was not deleted first "
                                        f"before being permanently deleted")
                await self._append([(records.schema_key(subject, record.version), None)])
            else:
                deleted = SchemaRecord(record.subject, record.version, record.schema_id, record.schema,
                                       record.schema_type, record.references, True, record.extra)
                await self._append([(records.schema_key(subject, record.version),
                                     records.schema_value(deleted))])
            return record.version

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        async with self._write_lock:
            self._check_writable(subject)
            every = self.state.versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            live = [record for record in every if not record.deleted]
            if not permanent and not live:
                raise RegistryError(errors.SUBJECT_SOFT_DELETED, f"Subject '{subject}' was soft deleted.Set "
                                                                 f"permanent=true to delete permanently")
            if permanent and live:
                raise RegistryError(errors.SUBJECT_NOT_SOFT_DELETED, f"Subject '{subject}' was not deleted "
                                                                     f"first before being permanently deleted")
            for record in every if permanent else live:
                if any(other.subject != subject for other in
                       self.state.referenced_by(subject, record.version, deleted=permanent)):
                    raise RegistryError(errors.REFERENCE_EXISTS, f"One or more references exist to the "
                                                                 f"schema {{subject={subject},"
                                                                 f"version={record.version}}}")
            if not permanent:
                await self._append([(records.subject_key(records.DELETE_SUBJECT, subject),
                                     records.delete_subject_value(subject, live[-1].version))])
                return [record.version for record in live]
            entries: Entries = [(records.schema_key(subject, record.version), None) for record in reversed(every)]
            entries += [(records.subject_key(kind, subject), None) for kind, settings in
                        ((records.CONFIG, self.state.configs), (records.MODE, self.state.modes))
                        if subject in settings]
            await self._append(entries)
            return [record.version for record in every]

    def _check_writable(self, subject: str | None) -> None:
        if self.state.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.read_only(subject)

    async def set_compatibility(self, subject: str | None, body: Any) -> str:
        level = body.get("compatibility") if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError(errors.INVALID_COMPATIBILITY_LEVEL,
                                "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                "backward_transitive, forward_transitive, and full_transitive")
        if subject is not None:
            check_subject(subject)
        async with self._write_lock:
            await self._append([(records.subject_key(records.CONFIG, subject),
                                 records.config_value(subject, level.upper()))])
        return level.upper()

    async def delete_compatibility(self, subject: str | None) -> str:
        async with self._write_lock:
            previous = self.state.configs.get(subject)
            if subject is not None and previous is None:
                raise errors.subject_not_found(subject)
            await self._append([(records.subject_key(records.CONFIG, subject), None)])
            return previous or DEFAULT_COMPATIBILITY

    async def set_mode(self, subject: str | None, body: Any, force: bool) -> str:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(errors.INVALID_MODE, "Invalid mode. Valid values are READWRITE, READONLY, "
                                                     "READONLY_OVERRIDE, and IMPORT.")
        mode = mode.upper()
        async with self._write_lock:
            if mode == "IMPORT" and not force and (self.state.versions(subject) if subject is not None
                                                   else self.state.subject_names()):
                raise RegistryError(errors.OPERATION_NOT_PERMITTED,
                                    "Cannot import since found existing subjects")
            await self._append([(records.subject_key(records.MODE, subject), records.mode_value(subject, mode))])
        return mode

    async def delete_mode(self, subject: str) -> str:
        async with self._write_lock:
            previous = self.state.modes.get(subject)
            if previous is None:
                raise errors.subject_not_found(subject)
            await self._append([(records.subject_key(records.MODE, subject), None)])
            return previous or DEFAULT_MODE


class RegisterRequest:
    """The body of a register, lookup or compatibility call."""

    def __init__(self, schema: str, schema_type: str, references: tuple[Reference, ...],
                 schema_id: int | None, version: int | None):
        self.schema = schema
        self.schema_type = schema_type
        self.references = references
        self.schema_id = schema_id
        self.version = version

    @classmethod
    def from_body(cls, body: Any) -> RegisterRequest:
        if not isinstance(body, dict):
            raise errors.invalid_schema("the body is not a JSON object")
        schema = body.get("schema")
        if not isinstance(schema, str) or not schema.strip():
            raise errors.invalid_schema("Empty schema")
        schema_type = body.get("schemaType") or schema_types.AVRO
        if not isinstance(schema_type, str) or schema_type.upper() not in schema_types.SCHEMA_TYPES:
            raise errors.invalid_schema(f"unknown schema type {schema_type!r}")
        try:
            references = tuple(Reference(str(item["name"]), str(item["subject"]), int(item["version"]))
                               for item in body.get("references") or ())
        except (KeyError, TypeError, ValueError):
            raise errors.invalid_schema("a reference needs a name, a subject and a version") from None
        schema_id, version = body.get("id"), body.get("version")
        for name, value in (("id", schema_id), ("version", version)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise errors.invalid_schema(f"{name} must be an integer")
        return cls(schema, schema_type.upper(), references,
                   schema_id if schema_id is not None and schema_id >= 0 else None,
                   version if version is not None and version > 0 else None)


def parse_version(text: str) -> int:
    """"latest" and -1 are -1; otherwise 1..2^31-1, or 42202."""
    if text in ("latest", "-1"):
        return -1
    try:
        version = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if not 1 <= version <= MAX_VERSION:
        raise errors.invalid_version(text)
    return version


def check_subject(subject: str) -> None:
    """Confluent's QualifiedSubject.isValidSubject: no control characters,
    not one of its reserved names."""
    if not subject or subject in ("__GLOBAL", "__EMPTY") or any(ord(char) < 32 or ord(char) == 127
                                                                 for char in subject):
        raise errors.invalid_subject(subject)

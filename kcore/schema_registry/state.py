"""The registry as the ``_schemas`` topic says it is: every version of
every subject, the schemas by id, the compatibility configs and modes.

``apply`` takes the topic's records in offset order (records.py has their
layout) and is the only way the state changes, so every broker that
replays the same records holds the same registry; ``offset`` is the next
offset to apply. ``generation`` grows with every change, for the caches
built on top (the allowed ids of validation.py).

A record that is not in Confluent's layout is skipped and counted, never
fatal: the topic is compacted and shared, and one bad record must not
stop a broker from serving the others.

Not thread-safe: owned by the broker's event loop.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kcore.schema_registry import records
from kcore.schema_registry.records import RecordFormatError, Reference, SchemaRecord

log = logging.getLogger(__name__)

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


@dataclass(frozen=True)
class Fingerprint:
    """What makes two registrations the same schema: Confluent compares
    the type, the (canonical) text and the references."""

    schema_type: str
    schema: str
    references: tuple[Reference, ...]

    @classmethod
    def of(cls, record: SchemaRecord) -> Fingerprint:
        return cls(record.schema_type, record.schema, record.references)


class RegistryState:
    def __init__(self) -> None:
        self.offset = 0
        self.generation = 0
        self.skipped_records = 0
        # subject -> version -> record (soft-deleted ones included)
        self.subjects: dict[str, dict[int, SchemaRecord]] = {}
        # id -> the (subject, version) pairs that hold it
        self.by_id: dict[int, set[tuple[str, int]]] = {}
        self.ids_by_fingerprint: dict[Fingerprint, int] = {}
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self.max_id = 0

    # -- replay -------------------------------------------------------------
    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        """One record at ``offset`` of the topic."""
        self.offset = max(self.offset, offset + 1)
        if key is None:
            self.skipped_records += 1
            return
        try:
            decoded = records.decode_key(key)
            self._apply(decoded, value)
        except RecordFormatError as exc:
            self.skipped_records += 1
            log.warning("_schemas offset %d skipped: %s", offset, exc)
            return
        self.generation += 1

    def _apply(self, key: dict, value: bytes | None) -> None:
        key_type = key["keytype"]
        subject = key.get("subject")
        if key_type == records.SCHEMA:
            if value is None:
                self._remove_version(str(subject), int(key["version"]))
            else:
                self._put_version(records.decode_schema_value(value))
        elif key_type in (records.CONFIG, records.MODE):
            target = self.configs if key_type == records.CONFIG else self.modes
            if value is None:
                target.pop(subject, None)
                return
            field = "compatibilityLevel" if key_type == records.CONFIG else "mode"
            setting = records.decode_value(value).get(field)
            if isinstance(setting, str):
                target[subject] = setting
        elif key_type == records.DELETE_SUBJECT and value is not None:
            up_to = records.decode_value(value).get("version")
            for version, record in list(self.subjects.get(str(subject), {}).items()):
                if isinstance(up_to, int) and version <= up_to and not record.deleted:
                    self._put_version(SchemaRecord(record.subject, record.version, record.schema_id,
                                                   record.schema, record.schema_type, record.references,
                                                   True, record.extra))
        elif key_type == records.CLEAR_SUBJECT and value is not None:
            for version, record in list(self.subjects.get(str(subject), {}).items()):
                if record.deleted:
                    self._remove_version(record.subject, version)

    def _put_version(self, record: SchemaRecord) -> None:
        versions = self.subjects.setdefault(record.subject, {})
        previous = versions.get(record.version)
        if previous is not None and previous.schema_id != record.schema_id:
            self._forget_id(previous)
        versions[record.version] = record
        self.by_id.setdefault(record.schema_id, set()).add((record.subject, record.version))
        self.ids_by_fingerprint.setdefault(Fingerprint.of(record), record.schema_id)
        self.max_id = max(self.max_id, record.schema_id)

    def _remove_version(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject)
        record = versions.pop(version, None) if versions is not None else None
        if record is None:
            return
        if not versions:
            del self.subjects[subject]
        self._forget_id(record)

    def _forget_id(self, record: SchemaRecord) -> None:
        holders = self.by_id.get(record.schema_id)
        if holders is None:
            return
        holders.discard((record.subject, record.version))
        if not holders:
            del self.by_id[record.schema_id]
            fingerprint = Fingerprint.of(record)
            if self.ids_by_fingerprint.get(fingerprint) == record.schema_id:
                del self.ids_by_fingerprint[fingerprint]

    # -- reads --------------------------------------------------------------
    def versions(self, subject: str, deleted: bool = False) -> list[SchemaRecord]:
        """The subject's versions in order; soft-deleted ones only with ``deleted``."""
        found = self.subjects.get(subject, {})
        return [found[version] for version in sorted(found) if deleted or not found[version].deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(name for name in self.subjects if self.versions(name, deleted))

    def schema_by_id(self, schema_id: int) -> SchemaRecord | None:
        """A record holding ``schema_id`` (a live one first): its text, type
        and references are the id's."""
        holders = self.by_id.get(schema_id)
        if not holders:
            return None
        records_ = [self.subjects[subject][version] for subject, version in sorted(holders)]
        return next((record for record in records_ if not record.deleted), records_[0])

    def holders(self, schema_id: int, deleted: bool = False) -> list[SchemaRecord]:
        return [record for record in (self.subjects[subject][version]
                                      for subject, version in sorted(self.by_id.get(schema_id, ())))
                if deleted or not record.deleted]

    def ids_of_subject(self, subject: str) -> Iterator[int]:
        """The ids of the subject's live versions."""
        return (record.schema_id for record in self.versions(subject))

    def compatibility(self, subject: str | None) -> str:
        return self.configs.get(subject) or self.configs.get(None) or DEFAULT_COMPATIBILITY

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or DEFAULT_MODE

    def referenced_by(self, subject: str, version: int, deleted: bool = False) -> list[SchemaRecord]:
        """The versions whose references name ``subject`` at ``version``."""
        return [record for versions in self.subjects.values() for record in versions.values()
                if (deleted or not record.deleted)
                and any(ref.subject == subject and ref.version == version for ref in record.references)]

    def all_records(self) -> Iterable[SchemaRecord]:
        for subject in sorted(self.subjects):
            yield from self.versions(subject, deleted=True)

"""The ``_schemas`` topic's records in Confluent's layout
(schema_registry/records.py) and the registry they replay into
(state.py): keys byte for byte as Confluent's storage/*Key.java write them,
values as a Confluent registry left them (fields kcore does not use kept
or ignored), soft deletes, tombstones, bad records skipped."""
from __future__ import annotations

import json

from kcore.schema_registry import records
from kcore.schema_registry.records import Reference, SchemaRecord
from kcore.schema_registry.state import RegistryState


def test_keys_are_confluents_json_in_its_field_order():
    assert records.schema_key("orders-value", 3) == \
        b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'
    assert records.subject_key(records.CONFIG, None) == b'{"keytype":"CONFIG","magic":0}'
    assert records.subject_key(records.MODE, "s") == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert records.subject_key(records.DELETE_SUBJECT, "s") == \
        b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert records.noop_key() == b'{"keytype":"NOOP","magic":0}'


def test_schema_values_leave_out_avro_type_and_empty_references():
    avro = SchemaRecord("s", 1, 7, '"string"')
    assert json.loads(records.schema_value(avro)) == {"subject": "s", "version": 1, "id": 7,
                                                      "schema": '"string"', "deleted": False}
    proto = SchemaRecord("p", 2, 8, "syntax = \"proto3\";", "PROTOBUF", (Reference("a.proto", "a", 1),))
    assert json.loads(records.schema_value(proto)) == {
        "subject": "p", "version": 2, "id": 8, "schemaType": "PROTOBUF",
        "references": [{"name": "a.proto", "subject": "a", "version": 1}],
        "schema": "syntax = \"proto3\";", "deleted": False}


def replay(entries: list[tuple[bytes, bytes | None]]) -> RegistryState:
    state = RegistryState()
    for offset, (key, value) in enumerate(entries):
        state.apply(key, value, offset)
    return state


def confluent_schema(subject: str, version: int, schema_id: int, schema: str = '"string"',
                     deleted: bool = False) -> tuple[bytes, bytes]:
    """A record as a Confluent registry writes it (md5 and metadata included)."""
    return (json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}).encode(),
            json.dumps({"subject": subject, "version": version, "id": schema_id, "md5": "abc",
                        "metadata": {"properties": {"owner": "x"}}, "schema": schema,
                        "deleted": deleted}).encode())


def test_a_confluent_topic_replays_into_subjects_ids_and_settings():
    state = replay([
        confluent_schema("a-value", 1, 1),
        confluent_schema("a-value", 2, 2, '"int"'),
        confluent_schema("b-value", 1, 1),
        (b'{"keytype":"CONFIG","subject":"a-value","magic":0}', b'{"compatibilityLevel":"FULL"}'),
        (b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"NONE"}'),
        (b'{"keytype":"MODE","magic":0}', b'{"mode":"READONLY"}'),
        (b'{"keytype":"NOOP","magic":0}', b""),
    ])
    assert state.subject_names() == ["a-value", "b-value"]
    assert [record.schema_id for record in state.versions("a-value")] == [1, 2]
    assert {(r.subject, r.version) for r in state.holders(1)} == {("a-value", 1), ("b-value", 1)}
    assert state.compatibility("a-value") == "FULL" and state.compatibility("b-value") == "NONE"
    assert state.mode("b-value") == "READONLY"
    assert state.max_id == 2 and state.offset == 7
    assert state.versions("a-value")[0].extra == {"metadata": {"properties": {"owner": "x"}}}


def test_delete_subject_soft_deletes_up_to_its_version_and_tombstones_remove():
    state = replay([
        confluent_schema("s", 1, 1), confluent_schema("s", 2, 2, '"int"'), confluent_schema("s", 3, 3, '"long"'),
        (b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}', b'{"subject":"s","version":2}'),
    ])
    assert [r.version for r in state.versions("s")] == [3]
    assert [r.version for r in state.versions("s", deleted=True)] == [1, 2, 3]
    for version in (1, 2):
        state.apply(records.schema_key("s", version), None, state.offset)
    assert [r.version for r in state.versions("s", deleted=True)] == [3]
    assert state.schema_by_id(1) is None and state.schema_by_id(3) is not None


def test_records_that_are_not_confluents_layout_are_skipped_not_fatal():
    state = replay([
        (b"not json", b"{}"),
        (b'{"keytype":"SCHEMA","subject":"s","magic":1}', b"{}"),  # no version
        (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', b'{"subject":"s"}'),  # no id
        (b'{"keytype":"UNKNOWN","magic":0}', b"{}"),
        confluent_schema("ok", 1, 5),
    ])
    assert state.skipped_records == 4
    assert state.subject_names() == ["ok"] and state.offset == 5


def test_a_version_rewritten_with_another_id_releases_the_old_one():
    state = replay([confluent_schema("s", 1, 1), confluent_schema("s", 1, 2, '"int"')])
    assert state.schema_by_id(1) is None
    assert state.schema_by_id(2).schema == '"int"'

"""`kcore schemas` against the built-in registry: register, list, get by
version and by id, compatibility (exit 1 when incompatible), soft and
permanent delete, and Confluent's error codes for what does not exist."""
from __future__ import annotations

import json

from kcore.cli.main import main

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "note", "type": "string", "default": ""}]}
BREAKING = {**V1, "fields": [{"name": "id", "type": "string"}]}


def kcore(registry, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["schemas", argv[0], "--registry-url", registry.url, *argv[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def schema_file(tmp_path, schema: dict) -> str:
    path = tmp_path / f"{schema['name']}-{len(schema['fields'])}-{schema['fields'][0]['type']}.avsc"
    path.write_text(json.dumps(schema))
    return str(path)


def test_register_list_get_and_compatibility(registry, subject, capsys, tmp_path):
    code, out, _ = kcore(registry, capsys, "register", subject, schema_file(tmp_path, V1))
    assert code == 0 and out.startswith(f"Registered under {subject}: id ")
    first_id = int(out.split("id ")[1])
    assert kcore(registry, capsys, "compatibility", subject, schema_file(tmp_path, V2))[:2] == (0, "compatible\n")
    code, out, _ = kcore(registry, capsys, "compatibility", subject, schema_file(tmp_path, BREAKING))
    assert code == 1 and out.startswith("incompatible\n") and len(out.splitlines()) > 1
    assert kcore(registry, capsys, "register", subject, schema_file(tmp_path, V2))[0] == 0

    code, out, _ = kcore(registry, capsys, "list", "--prefix", subject)
    assert code == 0 and out.splitlines()[1].split() == [subject, "1,2"]
    code, out, _ = kcore(registry, capsys, "get", subject, "--version", "1")
    got = json.loads(out)
    assert code == 0 and (got["subject"], got["version"], got["id"]) == (subject, 1, first_id)
    assert json.loads(got["schema"]) == V1
    code, out, _ = kcore(registry, capsys, "get", "--id", str(first_id))
    assert code == 0 and json.loads(json.loads(out)["schema"]) == V1


def test_soft_then_permanent_delete(registry, subject, capsys, tmp_path):
    assert kcore(registry, capsys, "register", subject, schema_file(tmp_path, V1))[0] == 0
    assert kcore(registry, capsys, "delete", subject)[:2] == (0, f"Deleted {subject} version(s) 1\n")
    assert kcore(registry, capsys, "list", "--prefix", subject)[1].splitlines()[1:] == []
    code, out, _ = kcore(registry, capsys, "list", "--deleted", "--prefix", subject)
    assert out.splitlines()[1].split() == [subject, "1"]
    code, out, _ = kcore(registry, capsys, "delete", subject, "--permanent")
    assert (code, out) == (0, f"Permanently deleted {subject} version(s) 1\n")
    assert kcore(registry, capsys, "list", "--deleted", "--prefix", subject)[1].splitlines()[1:] == []


def test_what_does_not_exist_gets_confluents_codes(registry, subject, capsys, tmp_path):
    code, _, err = kcore(registry, capsys, "get", subject)
    assert code == 1 and "404 error_code 40401" in err
    code, _, err = kcore(registry, capsys, "get", "--id", "987654")
    assert code == 1 and "404 error_code 40403" in err
    bad = tmp_path / "bad.avsc"
    bad.write_text('{"type": "record", "name": "Broken"}')
    code, _, err = kcore(registry, capsys, "register", subject, str(bad))
    assert code == 1 and "error_code 42201" in err
    code, _, err = kcore(registry, capsys, "register", subject, str(bad), "--reference", "nonsense")
    assert code == 1 and "NAME=SUBJECT:VERSION" in err

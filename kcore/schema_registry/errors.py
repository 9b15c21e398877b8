"""Confluent Schema Registry's errors: an HTTP status, an ``error_code``
and a message, answered as ``{"error_code": 40401, "message": "..."}``.

The codes and messages are those of Confluent's ``rest/exceptions/
Errors.java``: the HTTP status is the code's first three digits (40401 is
a 404), except for the plain codes of the REST layer itself (400 for a
body that is not JSON, 404 for an unknown path, 415, ...), which are the
HTTP status as they are.
"""
from __future__ import annotations

# HTTP 404
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_MODE_NOT_CONFIGURED = 40409
# HTTP 409
INCOMPATIBLE_SCHEMA = 40901
# HTTP 422
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
ID_DOES_NOT_MATCH = 42207
INVALID_SUBJECT = 42208
SCHEMA_TOO_LARGE = 42209
# HTTP 500
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
REQUEST_FORWARDING_FAILED = 50003
UNKNOWN_LEADER = 50004
# Confluent's security plugin answers a refused operation with 40301.
FORBIDDEN = 40301


class RegistryError(Exception):
    """A request the registry refuses: ``error_code`` as Confluent sends it."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        return self.error_code // 100 if self.error_code >= 10000 else self.error_code

    def body(self) -> dict:
        return {"error_code": self.error_code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(version: object) -> RegistryError:
    return RegistryError(VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    return RegistryError(SCHEMA_NOT_FOUND,
                         "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(INVALID_VERSION, f"The specified version '{version}' is not a valid version "
                                          f"id. Allowed values are between [1, 2^31-1] and the string "
                                          f"\"latest\"")


def invalid_schema(reason: str) -> RegistryError:
    return RegistryError(INVALID_SCHEMA, f"Invalid schema: {reason}")


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(INVALID_SUBJECT, f"The specified subject '{subject}' is not a valid subject")


def read_only(subject: str | None) -> RegistryError:
    where = f"Subject {subject}" if subject else "The registry"
    return RegistryError(OPERATION_NOT_PERMITTED, f"{where} is in read-only mode")

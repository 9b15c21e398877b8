"""Talking to the built-in schema registry in tests: plain HTTP for the
REST API's exact answers (status, error_code), and confluent-kafka's
SchemaRegistryClient for what applications do."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from kcore.testing.broker import BrokerProcess

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class RegistryBroker:
    broker: BrokerProcess
    url: str

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return call(self.url, method, path, body, raw, headers)

    def client(self, **conf: Any):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        return SchemaRegistryClient({"url": self.url, **conf})


def call(url: str, method: str, path: str, body: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, decoded JSON answer) of one request."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": CONTENT_TYPE, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        payload = error.read()
        try:
            return error.code, json.loads(payload)
        except ValueError:
            return error.code, payload.decode(errors="replace")

"""The parts of an HTTP/1.1 request both of the broker's HTTP listeners
read the same way (http_listener.py: /metrics and the console;
registry_listener.py: the schema registry): the request head, and the
body's length, which must be given (no chunked bodies) and bounded.

Pure functions; safe anywhere.
"""
from __future__ import annotations


class BadRequest(Exception):
    """A request answered with ``status`` and this message, then the
    connection is closed."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """(method, target, HTTP version, headers with lower-case names)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "bad request line")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], parts[2], headers


def body_length(headers: dict[str, str], max_bytes: int) -> int:
    """The Content-Length, at most ``max_bytes`` (413 beyond, so the body
    is never read)."""
    if "transfer-encoding" in headers:
        raise BadRequest(411, "send a Content-Length, not a chunked body")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest(400, "bad Content-Length") from None
    if length < 0:
        raise BadRequest(400, "bad Content-Length")
    if length > max_bytes:
        raise BadRequest(413, f"body over {max_bytes} bytes")
    return length


def media_type(headers: dict[str, str]) -> str:
    """The Content-Type without its parameters, lower case."""
    return headers.get("content-type", "").split(";")[0].strip().lower()

"""kcat-style output templates for consumed records.

A template is text with placeholders, as kcat's ``-f``::

    %t topic        %p partition      %o offset        %T timestamp (ms)
    %k key          %K key length     %s value         %S value length
    %h headers as ``name=value`` pairs joined by ``,``  %% a literal %

and the escapes ``\\n \\r \\t \\\\ \\xHH``. Lengths are -1 for a null key or
value, which prints as nothing. As in kcat, nothing is added after a
record: end the template with ``\\n`` for one record per line. The output
is bytes, since keys and values are arbitrary bytes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from kcore.protocol.records import Record

__all__ = ["RecordFormatter", "DEFAULT_TEMPLATE", "format_headers"]

DEFAULT_TEMPLATE = "%s\\n"

_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}

Piece = Callable[[str, int, Record], bytes]


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def format_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """``name=value`` pairs joined by ``,``; a null value prints as ``name=``."""
    return b",".join(name.encode() + b"=" + (value or b"") for name, value in headers)


_PLACEHOLDERS: dict[str, Piece] = {
    "t": lambda topic, partition, record: topic.encode(),
    "p": lambda topic, partition, record: str(partition).encode(),
    "o": lambda topic, partition, record: str(record.offset).encode(),
    "T": lambda topic, partition, record: str(record.timestamp).encode(),
    "k": lambda topic, partition, record: record.key or b"",
    "K": lambda topic, partition, record: _length(record.key),
    "s": lambda topic, partition, record: record.value or b"",
    "S": lambda topic, partition, record: _length(record.value),
    "h": lambda topic, partition, record: format_headers(record.headers),
}


class RecordFormatter:
    """A compiled template: ``format(topic, partition, record) -> bytes``.

    ``record`` is anything with offset, timestamp, key, value and headers
    (kcore.protocol.records.Record). Raises ValueError at construction for
    an unknown placeholder or escape. Immutable.
    """

    def __init__(self, template: str = DEFAULT_TEMPLATE) -> None:
        self.template = template
        self._pieces = _compile(template)

    def format(self, topic: str, partition: int, record) -> bytes:
        return b"".join(piece if isinstance(piece, bytes) else piece(topic, partition, record)
                        for piece in self._pieces)


def _compile(template: str) -> list[bytes | Piece]:
    pieces: list[bytes | Piece] = []
    literal = bytearray()
    position, end = 0, len(template)
    while position < end:
        char = template[position]
        if char == "%":
            token, position = _token(template, position, "placeholder")
            if token == "%":
                literal += b"%"
                continue
            if token not in _PLACEHOLDERS:
                raise ValueError(f"unknown placeholder %{token} in format {template!r}")
            if literal:
                pieces.append(bytes(literal))
                literal.clear()
            pieces.append(_PLACEHOLDERS[token])
        elif char == "\\":
            escaped, position = _escape(template, position)
            literal += escaped
        else:
            literal += char.encode()
            position += 1
    if literal:
        pieces.append(bytes(literal))
    return pieces


def _token(template: str, position: int, what: str) -> tuple[str, int]:
    if position + 1 >= len(template):
        raise ValueError(f"{what} cut short at the end of format {template!r}")
    return template[position + 1], position + 2


def _escape(template: str, position: int) -> tuple[bytes, int]:
    token, position = _token(template, position, "escape")
    if token in _ESCAPES:
        return _ESCAPES[token], position
    if token == "x":
        digits = template[position:position + 2]
        try:
            if len(digits) != 2:
                raise ValueError
            return bytes([int(digits, 16)]), position + 2
        except ValueError:
            raise ValueError(f"\\x needs two hex digits in format {template!r}") from None
    raise ValueError(f"unknown escape \\{token} in format {template!r}")

"""Kafka's ``sasl.jaas.config`` value, read as Kafka reads it (JaasConfig:
Java's JAAS file syntax for one or more login modules).

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret";

Each module is ``<class> <flag> [<name>=<value>]... ;``; a value is a
double-quoted string (backslash escapes the next character) or a bare
token. PlainLoginModule reads ``user_<name>`` options as the users the
broker accepts and ``username``/``password`` as its own login.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


class JaasError(ValueError):
    """The value does not parse as a JAAS login module list."""


@dataclass
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>="<password>"`` options."""
        return {name[5:]: value for name, value in self.options.items()
                if name.startswith("user_") and len(name) > 5}


def parse_jaas_config(text: str) -> list[LoginModule]:
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    index = 0
    while index < len(tokens):
        if index + 1 >= len(tokens):
            raise JaasError("a login module needs a class name and a control flag")
        (class_name, _), (flag, _) = tokens[index], tokens[index + 1]
        if flag.lower() not in FLAGS:
            raise JaasError(f"control flag {flag!r} of {class_name} is not one of {', '.join(FLAGS)}")
        module = LoginModule(class_name, flag.lower())
        index += 2
        while index < len(tokens) and tokens[index] != (";", "op"):
            if index + 2 >= len(tokens) or tokens[index + 1] != ("=", "op"):
                raise JaasError(f"option of {class_name} is not name=value")
            module.options[tokens[index][0]] = tokens[index + 2][0]
            index += 3
        if index >= len(tokens):
            raise JaasError(f"login module {class_name} does not end with ';'")
        modules.append(module)
        index += 1
    if not modules:
        raise JaasError("no login module")
    return modules


def _tokens(text: str) -> list[tuple[str, str]]:
    """(text, kind) with kind "op" for = and ;, "word" otherwise."""
    tokens = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise JaasError(f"cannot parse the JAAS config at character {position}")
        quoted, bare, equals, semicolon = match.groups()
        if quoted is not None:
            tokens.append((re.sub(r"\\(.)", r"\1", quoted, flags=re.S), "word"))
        elif bare is not None:
            tokens.append((bare, "word"))
        else:
            tokens.append((equals or semicolon, "op"))
        position = match.end()
        while position < len(text) and text[position].isspace():
            position += 1
    return tokens

"""docs/apis.md: every Kafka API the broker serves, written from the code.

``python -m kcore.cli.api_table > docs/apis.md`` regenerates the file, and
tests/unit/test_docs.py fails while the file and the code disagree.

The served ranges come from where ApiVersions gets them: the protocol's
``supported_versions()`` narrowed to the keys that have a handler
(``kcore.handlers.HANDLERS``), as the broker builds ``api_versions`` in
server/broker.py; the first flexible version from each request schema
(``kcore.protocol.messages``); broker-to-broker APIs, and the one version
brokers send each at, from ``INTER_BROKER_VERSIONS``.
"""
from __future__ import annotations

import sys

from kcore import protocol
from kcore.handlers import HANDLERS
from kcore.protocol.api_keys import BROKER_VERSIONS_FROM, INTER_BROKER_VERSIONS, ApiKey
from kcore.protocol.messages import REQUESTS

REGENERATE = "python -m kcore.cli.api_table > docs/apis.md"

_INTRO = f"""\
<!-- Written by `{REGENERATE}`: edit the code, not this file. -->
# Kafka APIs served

Every API a kcore broker answers, with the versions it advertises in
ApiVersions. A client sends the highest version that both it and the broker
know. A request for an API or a version outside this table closes the
connection, except an ApiVersions request of a newer version, which is
answered with UNSUPPORTED_VERSION and the table (KIP-511).

- **versions**: the lowest and highest version served.
- **flexible from**: the first version in Kafka's flexible encoding (compact
  strings and arrays, tagged fields); "-" where no version is flexible.
  A number above the highest version served means kcore serves only the
  older encoding of that API.
- **used by**: `clients` for the APIs clients call; `brokers` for the
  controller-to-broker and broker-to-broker requests, which brokers send at
  one version only (given as "sent at"). Followers replicate with Fetch and
  OffsetForLeaderEpoch, which are client APIs as well. A partition leader
  verifies transactional produces with the transaction coordinator through
  AddPartitionsToTxn v4 and later, which clients never send.

What real clients send, and what kcore does with the versions it answers
but does not implement in full (Produce v0-v2), is in
[protocol.md](protocol.md).
"""


def served_versions() -> dict[ApiKey, tuple[int, int]]:
    """The (min, max) version of each API the broker advertises, in key order."""
    return {key: versions for key, versions in protocol.supported_versions().items()
            if key in HANDLERS}


def _api_name(key: ApiKey) -> str:
    return REQUESTS[key].name.removesuffix("Request")


def _camel_case(key: ApiKey) -> str:
    """Kafka's name of a key without a schema here: DELETE_RECORDS -> DeleteRecords."""
    return "".join(word.capitalize() for word in key.name.split("_"))


def _flexible_from(key: ApiKey) -> str:
    flexible = REQUESTS[key].flexible_versions
    return "-" if flexible is None else str(flexible[0])


def _used_by(key: ApiKey, high: int) -> str:
    sent_at = INTER_BROKER_VERSIONS.get(key)
    if sent_at is not None:
        return f"brokers (sent at v{sent_at})"
    brokers_from = BROKER_VERSIONS_FROM.get(key)
    if brokers_from is not None:
        return f"clients (up to v{brokers_from - 1}), brokers (v{brokers_from}-{high})"
    return "clients"


def render() -> str:
    """The whole of docs/apis.md."""
    served = served_versions()
    lines = [_INTRO, "| key | API | versions | flexible from | used by |", "|---:|---|---|---|---|"]
    for key, (low, high) in served.items():
        versions = str(low) if low == high else f"{low}-{high}"
        lines.append(f"| {int(key)} | {_api_name(key)} | {versions} | {_flexible_from(key)} "
                     f"| {_used_by(key, high)} |")
    absent = [f"{int(key)} {_camel_case(key)}" for key in ApiKey if key not in served]
    lines += ["", "## Kafka APIs not served", "",
              "Kafka's API keys (apache/kafka `ApiKeys.java`) that a kcore broker does not "
              "advertise:", ""]
    lines += [f"- {entry}" for entry in absent]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())

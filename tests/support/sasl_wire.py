"""SASL logins over the blocking WireClient: SaslHandshake v1, then one
SaslAuthenticate per token (PLAIN: one; SCRAM: two), as a client that
speaks exactly the frames the test chooses (librdkafka decides for itself
when to re-authenticate; these do it when told)."""
from __future__ import annotations

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from kcore.security.scram import ScramClient
from tests.support.wire import WireClient


def sasl_login(client: WireClient, mechanism: str, user: str, password: str,
               authenticate_version: int = 1):
    """The last SaslAuthenticate response of one exchange (its error_code
    says whether it succeeded), or None once the broker closed the
    connection."""
    handshake = client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if handshake is None or handshake.error_code != ErrorCode.NONE:
        return handshake
    if mechanism == "PLAIN":
        return _authenticate(client, f"\0{user}\0{password}".encode(), authenticate_version)
    scram = ScramClient(mechanism, user, password)
    first = _authenticate(client, scram.first(), authenticate_version)
    if first is None or first.error_code != ErrorCode.NONE:
        return first
    final = _authenticate(client, scram.final(first.auth_bytes), authenticate_version)
    if final is not None and final.error_code == ErrorCode.NONE:
        scram.verify(final.auth_bytes)
    return final


def _authenticate(client: WireClient, token: bytes, version: int):
    return client.request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def metadata(client: WireClient):
    """A Metadata v8 request for every topic: None once the connection is closed."""
    try:
        return client.request(ApiKey.METADATA, 8, {
            "topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})
    except (ConnectionError, TimeoutError):
        return None

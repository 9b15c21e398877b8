"""SCRAM (RFC 5802/7677) against the RFC's own example exchange, and the
server's refusals: wrong proof, unknown user, replayed nonce, malformed
messages. The server is the one connections use; credentials are what the
broker stores (salted keys, no password)."""
import asyncio
import base64

import pytest

from kcore.security.scram import (
    AuthenticationFailed,
    ScramClient,
    ScramCredential,
    ScramServer,
    credential_from_salted,
    new_credential,
    salted_password,
)

# RFC 7677 section 3: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FINAL = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> ScramCredential:
    salted = salted_password("SCRAM-SHA-256", "pencil", SALT, 4096)
    return credential_from_salted("SCRAM-SHA-256", salted, SALT, 4096)


def server_for(credentials: dict, mechanism: str = "SCRAM-SHA-256", nonce: str | None = None):
    async def lookup(user, wanted):
        return credentials.get((user, wanted))
    return ScramServer(mechanism, lookup, b"decoy-key", server_nonce=nonce)


def run(coroutine):
    return asyncio.run(coroutine)


def test_server_reproduces_rfc_7677_exchange():
    server = server_for({("user", "SCRAM-SHA-256"): rfc_credential()}, nonce=SERVER_NONCE)
    first = run(server.evaluate(f"n,,n=user,r={CLIENT_NONCE}".encode()))
    assert first.decode() == f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert run(server.evaluate(CLIENT_FINAL.encode())).decode() == SERVER_FINAL
    assert server.complete and server.user == "user"


def test_client_reproduces_rfc_7677_exchange():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first() == f"n,,n=user,r={CLIENT_NONCE}".encode()
    server_first = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    assert client.final(server_first).decode() == CLIENT_FINAL
    client.verify(SERVER_FINAL.encode())
    with pytest.raises(AuthenticationFailed):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_credentials_keep_no_password_and_authenticate(mechanism):
    credential = new_credential(mechanism, "s3cret, with = signs")
    assert b"s3cret" not in credential.to_text().encode()
    assert ScramCredential.from_text(credential.to_text()) == credential
    server = server_for({("a,b=c", mechanism): credential}, mechanism)
    client = ScramClient(mechanism, "a,b=c", "s3cret, with = signs")
    final = run(server.evaluate(client.first()))
    client.verify(run(server.evaluate(client.final(final))))
    assert server.user == "a,b=c"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_is_refused(mechanism):
    server = server_for({("alice", mechanism): new_credential(mechanism, "right")}, mechanism)
    client = ScramClient(mechanism, "alice", "wrong")
    server_first = run(server.evaluate(client.first()))
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        run(server.evaluate(client.final(server_first)))
    assert not server.complete and server.user is None


def test_unknown_user_gets_a_salt_and_fails_at_the_proof():
    server = server_for({})
    client = ScramClient("SCRAM-SHA-256", "nobody", "x")
    server_first = run(server.evaluate(client.first()))
    again = run(server_for({}).evaluate(client.first()))
    # The same made-up salt each time, as a real user's would be.
    assert server_first.split(b",")[1] == again.split(b",")[1]
    with pytest.raises(AuthenticationFailed):
        run(server.evaluate(client.final(server_first)))


def test_replayed_client_final_fails_on_a_new_exchange():
    credentials = {("alice", "SCRAM-SHA-256"): new_credential("SCRAM-SHA-256", "pw")}
    client = ScramClient("SCRAM-SHA-256", "alice", "pw")
    first = server_for(credentials)
    recorded = client.final(run(first.evaluate(client.first())))
    run(first.evaluate(recorded))
    assert first.complete
    second = server_for(credentials)
    run(second.evaluate(client.first()))
    with pytest.raises(AuthenticationFailed, match="nonce"):
        run(second.evaluate(recorded))


@pytest.mark.parametrize("message", [
    b"", b"\xff\xfe", b"n,,", b"p=tls-unique,,n=a,r=x", b"n,,n=a", b"n,,r=abc",
    b"n,a=bob,n=alice,r=abc", b"n,,n=a=b,r=abc", b"n,,m=ext,n=a,r=b", b"garbage",
])
def test_malformed_client_first_is_refused(message):
    with pytest.raises(AuthenticationFailed):
        run(server_for({}).evaluate(message))


@pytest.mark.parametrize("final", [
    b"c=biws,r=NONCE", b"r=NONCE,p=AAAA", b"c=eSws,r=NONCE,p=AAAA", b"c=biws,r=NONCE,p=!!notbase64",
    b"c=biws,r=other,p=AAAA",
])
def test_malformed_client_final_is_refused(final):
    credentials = {("alice", "SCRAM-SHA-256"): new_credential("SCRAM-SHA-256", "pw")}
    server = server_for(credentials, nonce="SERVER")
    run(server.evaluate(b"n,,n=alice,r=CLIENT"))
    with pytest.raises(AuthenticationFailed):
        run(server.evaluate(final.replace(b"NONCE", b"CLIENTSERVER")))
    with pytest.raises(AuthenticationFailed):
        run(server.evaluate(b"c=biws,r=CLIENTSERVER,p=AAAA"))  # no second chance


def test_client_nonce_sent_twice_is_accepted_as_kafka_does():
    """librdkafka < 2.6.1 (Debian's kcat) prepends its nonce once more; the
    proof then covers that doubled nonce."""
    import hashlib
    import hmac

    credentials = {("alice", "SCRAM-SHA-256"): new_credential("SCRAM-SHA-256", "pw")}
    server = server_for(credentials, nonce="SERVER")
    server_first = run(server.evaluate(b"n,,n=alice,r=CLIENT")).decode()
    salt = base64.b64decode(server_first.split(",")[1][2:])
    salted = salted_password("SCRAM-SHA-256", "pw", salt, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = "c=biws,r=CLIENTCLIENTSERVER"
    auth_message = f"n=alice,r=CLIENT,{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    assert run(server.evaluate(f"{without_proof},p={proof}".encode())).startswith(b"v=")
    assert server.complete

"""A kcore listener with a security protocol for one bench run: SSL
(TLS only) or SASL_SSL (TLS + SASL PLAIN; the exchange costs once per
connection, the TLS record layer per byte), with a throw-away CA and a
server certificate for the host made with trustme, and the librdkafka
settings its clients need.

PLAINTEXT adds nothing: the default runs are untouched.
"""
from __future__ import annotations

from pathlib import Path

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
BENCH_USER, BENCH_PASSWORD = "bench", "bench-secret"


def listener_settings(protocol: str, host: str, port: int, workdir: Path) -> tuple[dict, dict]:
    """(broker overrides, client settings) for a ``protocol`` listener."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"security {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    broker = {"listeners": f"{protocol}://{host}:{port}"}
    client: dict = {}
    if protocol == "PLAINTEXT":
        return broker, client
    client["security.protocol"] = protocol
    if protocol.endswith("SSL"):
        import trustme  # test extra: only a TLS bench run needs it

        ca = trustme.CA()
        ca_file, keystore = workdir / "bench-ca.pem", workdir / "bench-server.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        ca.issue_cert(host).private_key_and_cert_chain_pem.write_to_path(str(keystore))
        broker.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
        client["ssl.ca.location"] = str(ca_file)
    if protocol.startswith("SASL"):
        name = protocol.lower()
        broker.update({
            "sasl.enabled.mechanisms": "PLAIN",
            f"listener.name.{name}.plain.sasl.jaas.config":
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{BENCH_USER}="{BENCH_PASSWORD}";'})
        client.update({"sasl.mechanism": "PLAIN", "sasl.username": BENCH_USER,
                       "sasl.password": BENCH_PASSWORD})
    return broker, client

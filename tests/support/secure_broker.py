"""A broker with one listener per security protocol (plus MTLS: SSL with
client certificates required), certificates from a throw-away CA made
with trustme, PLAIN users from Kafka's JAAS property and SCRAM users added
with `kcore users add`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trustme

from tests.support import BrokerProcess, free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{name}="{password}"' for name, password in USERS.items()) + ";")
SCRAM_USER, SCRAM_PASSWORD = "scram-user", "scram-secret"
CLIENT_PRINCIPAL = "User:CN=kcore-client,OU=clients,O=kcore tests"
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS")


@dataclass
class Pki:
    directory: Path
    ca_file: Path
    server_file: Path
    client_cert_file: Path
    client_key_file: Path
    ca: trustme.CA = field(repr=False)


@dataclass
class SecureBroker:
    process: BrokerProcess
    ports: dict[str, int]
    pki: Pki

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


def make_pki(directory: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost and a client
    certificate (CLIENT_PRINCIPAL), as PEM files in ``directory``."""
    ca = trustme.CA(organization_name="kcore tests CA")
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("kcore-client@example.com", common_name="kcore-client",
                           organization_name="kcore tests", organization_unit_name="clients")
    files = Pki(directory, directory / "ca.pem", directory / "server.pem",
                directory / "client.pem", directory / "client.key", ca)
    ca.cert_pem.write_to_path(str(files.ca_file))
    server.private_key_and_cert_chain_pem.write_to_path(str(files.server_file))
    for blob in client.cert_chain_pems:
        blob.write_to_path(str(files.client_cert_file), append=True)
    client.private_key_pem.write_to_path(str(files.client_key_file))
    return files


def broker_settings(pki: Pki, ports: dict[str, int]) -> dict[str, str]:
    return {
        "listeners": ",".join(f"{name}://127.0.0.1:{ports[name]}" for name in LISTENERS),
        "listener.security.protocol.map": ("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                           "SASL_SSL:SASL_SSL,MTLS:SSL"),
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_file),
        "ssl.truststore.location": str(pki.ca_file),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "http.listeners": "",
        "group.initial.rebalance.delay.ms": "0",
        # Refusals are answered at once here: these tests fail passwords on
        # purpose from one address; test_bad_input checks the delay itself.
        "connection.failed.authentication.delay.ms": "0",
    }


def start_secure_broker(directory: Path, pki: Pki, extra: dict[str, str] | None = None) -> SecureBroker:
    ports = {name: free_port() for name in LISTENERS}
    process = BrokerProcess(directory, {**broker_settings(pki, ports), **(extra or {})},
                            port=ports["PLAINTEXT"]).start()
    return SecureBroker(process, ports, pki)

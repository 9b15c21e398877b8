"""PKCS#12 key and trust stores (``ssl.keystore.type=PKCS12``, the format
keytool writes by default since Java 9), read with ``cryptography`` and
handed to the ssl module as PEM, the only form it loads.

A key store holds one private key with its certificate chain; a trust
store holds certificates only (keytool's trusted-certificate entries,
which OpenSSL reads as the store's extra certificates). Both are opened
with their store password; a wrong password or a damaged file is a
ValueError naming what is wrong.
"""
from __future__ import annotations

from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)


def _load(path: str, password: str | None) -> pkcs12.PKCS12KeyAndCertificates:
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError as exc:
        raise ValueError(f"cannot open the PKCS12 store {path} (wrong password or not PKCS12): {exc}") from None


def keystore_pem(path: str, password: str | None) -> tuple[str, str]:
    """(private key, certificate chain) in PEM; the key is encrypted with
    the store password again when there is one, so the PEM never holds it
    in the clear."""
    store = _load(path, password)
    if store.key is None or store.cert is None:
        raise ValueError(f"the PKCS12 store {path} holds no private key with its certificate")
    encryption = BestAvailableEncryption(password.encode()) if password else NoEncryption()
    key = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption).decode()
    chain = [store.cert] + list(store.additional_certs)
    return key, "".join(c.certificate.public_bytes(Encoding.PEM).decode() for c in chain)


def truststore_pem(path: str, password: str | None) -> str:
    """Every certificate of the store, in PEM."""
    store = _load(path, password)
    certificates = ([store.cert] if store.cert is not None else []) + list(store.additional_certs)
    if not certificates:
        raise ValueError(f"the PKCS12 store {path} holds no certificate")
    return "".join(c.certificate.public_bytes(Encoding.PEM).decode() for c in certificates)

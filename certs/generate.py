"""Self-signed CA and serving certificate for the webhook (Koordinator's
`pkg/webhook/util/generator/`).

The CA (CN `webhook-cert-ca`) signs a serving certificate for serverAuth whose SANs always include
`localhost` and `127.0.0.1`, plus the names the operator asks for (IP addresses become IP SANs).
As in Koordinator the serving certificate starts when its CA starts, so a chain is never "not yet
valid" on a node whose clock lags the one that generated it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.material import CertPaths, Material, write_directory
from certs.names import NAMESPACE, SERVICE

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
CA_COMMON_NAME: Final = "webhook-cert-ca"
DEFAULT_VALIDITY: Final = dt.timedelta(days=3650)
LOCAL_NAMES: Final = ("localhost", "127.0.0.1")
KEY_TYPES: Final = ("rsa2048", "rsa4096", "ecdsa-p256")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def service_names(service: str, namespace: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Every name a client may use for `service` (kube-apiserver uses `svc.ns.svc`), then `extra`."""
    names = (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
        *extra,
    )
    return tuple(dict.fromkeys(names))


def new_key(key_type: str = "rsa2048") -> PrivateKey:
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type in ("rsa2048", "rsa4096"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(key_type[3:]))
    raise ValueError(f"key type {key_type!r}: must be one of {', '.join(KEY_TYPES)}")


def _subject_alt_names(names: Iterable[str]) -> list[x509.GeneralName]:
    result: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):  # keep order, drop duplicates
        try:
            result.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            result.append(x509.DNSName(name))
    return result


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        key_encipherment=True,
        key_cert_sign=cert_sign,
        content_commitment=False,
        data_encipherment=False,
        key_agreement=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def generate_ca(
    now: dt.datetime, validity: dt.timedelta = DEFAULT_VALIDITY, key_type: str = "rsa2048"
) -> tuple[PrivateKey, x509.Certificate]:
    key = new_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def generate_serving_cert(
    ca_key: PrivateKey,
    ca_cert: x509.Certificate,
    names: Sequence[str],
    now: dt.datetime,
    validity: dt.timedelta = DEFAULT_VALIDITY,
    key_type: str = "rsa2048",
) -> tuple[PrivateKey, x509.Certificate]:
    key = new_key(key_type)
    all_names = [*names, *LOCAL_NAMES]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, all_names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(ca_cert.not_valid_before_utc)
        .not_valid_after(min(now + validity, ca_cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(_subject_alt_names(all_names)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def generate_material(
    names: Sequence[str],
    now: dt.datetime,
    *,
    ca_validity: dt.timedelta = DEFAULT_VALIDITY,
    validity: dt.timedelta = DEFAULT_VALIDITY,
    key_type: str = "rsa2048",
) -> Material:
    """A new CA and a serving certificate it signed."""
    ca_key, ca_cert = generate_ca(now, ca_validity, key_type)
    key, cert = generate_serving_cert(ca_key, ca_cert, names, now, validity, key_type)
    return Material(ca_key=ca_key, ca_certs=(ca_cert,), cert=cert, key=key)


def ensure_serving_certs(
    directory: Path,
    dns_names: Sequence[str] = (),
    now: dt.datetime | None = None,
    *,
    service: str = SERVICE,
    namespace: str = NAMESPACE,
) -> tuple[CertPaths, bool]:
    """Create `ca.crt`, `tls.crt`, `tls.key` (and `ca.key`) in `directory` unless the first three exist;
    True if created. The certificate carries the webhook Service's names (what `certs generate` and
    `certs inspect` use), `dns_names`, and localhost, so `certs inspect` and `rotate` accept it."""
    paths = CertPaths(directory)
    if paths.complete():
        return paths, False
    write_directory(directory, generate_material(list(service_names(service, namespace, dns_names)), now or utcnow()))
    return paths, True

"""Self-signed CA and serving certificate for the webhook (Koordinator's generator, spec 12).

The CA (CN `webhook-cert-ca`) signs a serving certificate for serverAuth whose SANs always include
`localhost` and `127.0.0.1`, plus the names the operator asks for (IP addresses become IP SANs).
Files are written atomically (temp file + rename), the private key with mode 0600.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "tls.crt", "tls.key"
CA_COMMON_NAME = "webhook-cert-ca"
DEFAULT_VALIDITY = dt.timedelta(days=3650)
LOCAL_NAMES = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class CertPaths:
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / CA_FILE

    @property
    def cert(self) -> Path:
        return self.directory / CERT_FILE

    @property
    def key(self) -> Path:
        return self.directory / KEY_FILE

    def complete(self) -> bool:
        return self.ca.is_file() and self.cert.is_file() and self.key.is_file()


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _subject_alt_names(names: Iterable[str]) -> list[x509.GeneralName]:
    result: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):  # keep order, drop duplicates
        try:
            result.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            result.append(x509.DNSName(name))
    return result


def generate_ca(now: dt.datetime, validity: dt.timedelta = DEFAULT_VALIDITY) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                     content_commitment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def generate_serving_cert(ca_key: rsa.RSAPrivateKey, ca_cert: x509.Certificate, names: Sequence[str],
                          now: dt.datetime, validity: dt.timedelta = DEFAULT_VALIDITY) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _new_key()
    all_names = [*names, *LOCAL_NAMES]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, all_names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(ca_cert.not_valid_before_utc)
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName(_subject_alt_names(all_names)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False,
                                     content_commitment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def ensure_serving_certs(directory: Path, dns_names: Sequence[str] = (), now: dt.datetime | None = None) -> tuple[CertPaths, bool]:
    """Create `ca.crt`, `tls.crt`, `tls.key` in `directory` unless all three exist; True if created."""
    paths = CertPaths(directory)
    if paths.complete():
        return paths, False
    directory.mkdir(parents=True, exist_ok=True)
    now = now or dt.datetime.now(dt.timezone.utc)
    ca_key, ca_cert = generate_ca(now)
    key, cert = generate_serving_cert(ca_key, ca_cert, list(dns_names), now)
    write_atomically(paths.key, _pem_key(key), 0o600)
    write_atomically(paths.cert, _pem_cert(cert))
    write_atomically(paths.ca, _pem_cert(ca_cert))
    return paths, True

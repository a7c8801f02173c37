"""The certificates and keys a real control plane on loopback needs, made with `cryptography`.

One CA signs the API server's serving certificate and every client certificate: a client is
authenticated by its certificate's CN (the user) and O (the groups), as kube-apiserver's
`--client-ca-file` does. The service-account key pair signs and verifies tokens.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.generate import generate_ca, generate_serving_cert, new_key
from certs.material import pem_certs, pem_key

APISERVER_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "10.0.0.1",
)


@dataclass(frozen=True)
class ClientCert:
    """A client certificate and its key, as files a kubeconfig names."""

    cert: Path
    key: Path


class Pki:
    """A CA in `directory`, the API server's serving certificate, and client certificates on demand."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._now = dt.datetime.now(dt.UTC)
        self._ca_key, self._ca_cert = generate_ca(self._now)
        self.ca = self._write("ca.crt", pem_certs([self._ca_cert]))
        self.ca_key = self._write("ca.key", pem_key(self._ca_key))
        key, cert = generate_serving_cert(self._ca_key, self._ca_cert, APISERVER_NAMES, self._now)
        self.serving = ClientCert(
            self._write("apiserver.crt", pem_certs([cert])), self._write("apiserver.key", pem_key(key))
        )
        self.service_account_key, self.service_account_pub = self._service_account_keys()

    @property
    def ca_pem(self) -> bytes:
        return self.ca.read_bytes()

    def client(self, user: str, groups: Sequence[str] = ()) -> ClientCert:
        """A certificate that authenticates as `user` in `groups` (files named after the user)."""
        key = new_key()
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(subject))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._ca_cert.not_valid_before_utc)
            .not_valid_after(self._ca_cert.not_valid_after_utc)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        stem = user.replace(":", "-")
        return ClientCert(self._write(f"{stem}.crt", pem_certs([cert])), self._write(f"{stem}.key", pem_key(key)))

    def _service_account_keys(self) -> tuple[Path, Path]:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return self._write("sa.key", pem_key(key)), self._write("sa.pub", public)

    def _write(self, name: str, data: bytes) -> Path:
        path = self.directory / name
        path.write_bytes(data)
        path.chmod(0o600)
        return path

"""Certificate material and where it lives: a directory or the data of a Secret.

`Material` is one CA bundle (the signing CA first, then older CAs still trusted during a rotation),
the CA's private key when known, and the serving pair. In a directory it is `ca.crt` (the bundle),
`tls.crt`, `tls.key` and `ca.key`; in a Secret the same keys, and Koordinator's names
(`ca-cert.pem`, `cert.pem`, ...) are read too, because Secrets written by koord-manager exist.

A directory is written the way kubelet updates a mounted Secret: the files go into a fresh hidden
directory, then one `rename` of the `..data` symlink switches all of them at once. A reader can
never see a new certificate next to the old key (the window that otherwise breaks every handshake).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

CA_FILE, CERT_FILE, KEY_FILE, CA_KEY_FILE = "ca.crt", "tls.crt", "tls.key", "ca.key"
DATA_LINK: Final = "..data"
# Secret data keys we read, in order of preference (ours, then Koordinator's).
SECRET_KEYS: Final = {
    CA_FILE: (CA_FILE, "ca-cert.pem"),
    CERT_FILE: (CERT_FILE, "cert.pem"),
    KEY_FILE: (KEY_FILE, "key.pem"),
    CA_KEY_FILE: (CA_KEY_FILE, "ca-key.pem"),
}


class MaterialError(ValueError):
    """Stored certificate material is missing or unreadable."""


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

    @property
    def ca_key(self) -> Path:
        return self.directory / CA_KEY_FILE

    def complete(self) -> bool:
        return self.ca.is_file() and self.cert.is_file() and self.key.is_file()


@dataclass(frozen=True)
class Material:
    ca_key: Any  # a private key, or None when only the public bundle is known (cannot sign)
    ca_certs: tuple[x509.Certificate, ...]
    cert: x509.Certificate
    key: Any

    @property
    def ca(self) -> x509.Certificate:
        return self.ca_certs[0]

    def files(self) -> dict[str, bytes]:
        files = {CA_FILE: pem_certs(self.ca_certs), CERT_FILE: pem_certs([self.cert]), KEY_FILE: pem_key(self.key)}
        if self.ca_key is not None:
            files[CA_KEY_FILE] = pem_key(self.ca_key)
        return files


def pem_key(key: Any) -> bytes:
    pem: bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return pem


def pem_certs(certs: Any) -> bytes:
    return b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certs)


def fingerprint(cert: x509.Certificate) -> str:
    return cert.fingerprint(hashes.SHA256()).hex()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_certs(data: bytes, what: str) -> tuple[x509.Certificate, ...]:
    try:
        certs = tuple(x509.load_pem_x509_certificates(data))
    except ValueError as exc:
        raise MaterialError(f"{what}: no PEM certificate ({exc})") from None
    return certs


def parse_key(data: bytes, what: str) -> Any:
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise MaterialError(f"{what}: no usable PEM private key ({exc})") from None


def from_files(files: Mapping[str, bytes], where: str) -> Material:
    """Material from file contents by name; raises MaterialError naming what is missing or broken."""
    missing = [name for name in (CA_FILE, CERT_FILE, KEY_FILE) if not files.get(name)]
    if missing:
        raise MaterialError(f"{where}: missing {', '.join(missing)}")
    ca_key = parse_key(files[CA_KEY_FILE], f"{where}/{CA_KEY_FILE}") if files.get(CA_KEY_FILE) else None
    return Material(
        ca_key=ca_key,
        ca_certs=parse_certs(files[CA_FILE], f"{where}/{CA_FILE}"),
        cert=parse_certs(files[CERT_FILE], f"{where}/{CERT_FILE}")[0],
        key=parse_key(files[KEY_FILE], f"{where}/{KEY_FILE}"),
    )


def read_directory_files(directory: Path) -> dict[str, bytes]:
    return {
        name: (directory / name).read_bytes()
        for name in (CA_FILE, CERT_FILE, KEY_FILE, CA_KEY_FILE)
        if (directory / name).is_file()
    }


def read_directory(directory: Path) -> Material:
    return from_files(read_directory_files(directory), str(directory))


def secret_files(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """The files a Secret holds under our names, whichever naming it uses."""
    data = secret.get("data") or {}
    files = {}
    for name, keys in SECRET_KEYS.items():
        for key in keys:
            if data.get(key):
                files[name] = base64.b64decode(data[key])
                break
    return files


def secret_data(material: Material) -> dict[str, str]:
    return {name: base64.b64encode(content).decode() for name, content in material.files().items()}


def write_directory(directory: Path, material: Material) -> bool:
    """Switch `directory` to `material` atomically; False (nothing written) when it already holds it."""
    files = material.files()
    if read_directory_files(directory) == files:
        return False
    if not directory.exists():  # whatever the umask: the key's directory is not world-writable
        directory.mkdir(parents=True)
        directory.chmod(0o755)
    previous = os.readlink(directory / DATA_LINK) if (directory / DATA_LINK).is_symlink() else None
    version = Path(tempfile.mkdtemp(dir=directory, prefix="..version-"))
    for name, content in files.items():
        (version / name).write_bytes(content)
        (version / name).chmod(0o600 if name.endswith(".key") else 0o644)
    version.chmod(0o755)
    _replace_with_symlink(directory / DATA_LINK, version.name)
    for name in files:  # stable names point through ..data; a plain file left by an old writer is replaced
        link = directory / name
        if not (link.is_symlink() and os.readlink(link) == f"{DATA_LINK}/{name}"):
            _replace_with_symlink(link, f"{DATA_LINK}/{name}")
    if previous and previous != version.name:
        old = own_version_directory(directory, previous)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return True


def own_version_directory(directory: Path, target: str) -> Path | None:
    """The directory a previous `..data` pointed at, only when it is one of ours: a `..version-*`
    directory (not a symlink) directly inside `directory`, checked after resolving. A planted
    `..data -> /somewhere` is left alone, whatever it points at."""
    candidate = directory / target
    try:
        resolved, home = candidate.resolve(strict=True), directory.resolve(strict=True)
    except OSError:
        return None
    if (
        candidate.is_symlink()
        or resolved.parent != home
        or not resolved.name.startswith("..version-")
        or not resolved.is_dir()
    ):
        return None
    return resolved


def _replace_with_symlink(path: Path, target: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target)
    os.replace(temporary, path)

"""Live reload of the serving certificate into the running TLS context: no restart, no dropped connection.

A mounted Secret changes by kubelet swapping a `..data` symlink, which no mtime on the visible
paths reflects, so the files' content digest is polled (in a thread: the event loop never waits on
the disk). A changed pair is checked before it touches the live context: the key must match the
certificate and OpenSSL must accept both in a scratch context. Only then is it loaded with
`SSLContext.load_cert_chain` on the context the listener uses: handshakes from then on present the
new chain, connections already open keep theirs. A bad pair is counted as a reload error and the
old chain keeps serving; it is tried again when the files change. Each worker process runs its own
reloader.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.checks import key_matches
from certs.material import CertPaths, digest

log = logging.getLogger("colocate.tls")


@dataclass(frozen=True)
class LoadedChain:
    digest: str
    cert: x509.Certificate
    ca: x509.Certificate | None  # the CA in ca.crt that issued the serving certificate, if found


#: TLS 1.2 suites offered: forward-secret AEAD only, as Gatekeeper and Go's defaults (TLS 1.3's are all AEAD)
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def new_server_context() -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    return context


def _issuer(cert: x509.Certificate, ca_path: Path) -> x509.Certificate | None:
    try:
        candidates = x509.load_pem_x509_certificates(ca_path.read_bytes())
    except (OSError, ValueError):
        return None
    for ca in candidates:
        try:
            cert.verify_directly_issued_by(ca)
            return ca
        except Exception:  # noqa: BLE001 - InvalidSignature, wrong key type...: not this one
            continue
    return None


class CertReloader:
    def __init__(
        self,
        paths: CertPaths,
        *,
        interval: float = 1.0,
        on_reload: Callable[[LoadedChain | None, str], None] | None = None,
    ) -> None:
        self.paths, self.interval, self.on_reload = paths, interval, on_reload
        self.context = new_server_context()
        self.current: LoadedChain | None = None
        self._rejected: str | None = None  # digest of a pair already found unusable
        self._suspect: str | None = None  # a failure seen once: reported if the next poll sees it again

    def load_initial(self) -> ssl.SSLContext:
        """Load the files into the context (raising on unusable ones): the context to listen with."""
        chain = self._prepare(*self._read())
        if isinstance(chain, str):
            raise ssl.SSLError(chain)
        self._install(*chain)
        return self.context

    def _read(self) -> tuple[bytes, bytes]:
        """Both files from one version of the directory. A kubelet-projected Secret is swapped by
        renaming its `..data` symlink: resolving each file on its own can straddle the swap and
        pair a new certificate with an old key, so the key is read from the directory the
        certificate resolved to."""
        cert = Path(os.path.realpath(self.paths.cert))
        key = cert.parent / Path(os.path.realpath(self.paths.key)).name
        return cert.read_bytes(), key.read_bytes()

    def _prepare(self, cert_pem: bytes, key_pem: bytes) -> tuple[LoadedChain, Path] | str:
        """Validate a pair (in a worker thread); the chain and a private copy to load, or what is wrong."""
        try:
            cert = x509.load_pem_x509_certificates(cert_pem)[0]
            key = serialization.load_pem_private_key(key_pem, password=None)
        except (ValueError, TypeError, IndexError) as exc:
            return f"unreadable certificate or key: {exc}"
        if not key_matches(cert, key):
            return "the key does not match the certificate (files caught mid-update?)"
        staging = Path(tempfile.mkdtemp(prefix="colocate-tls-"))
        (staging / "tls.crt").write_bytes(cert_pem)
        (staging / "tls.key").write_bytes(key_pem)
        try:
            new_server_context().load_cert_chain(staging / "tls.crt", staging / "tls.key")
        except ssl.SSLError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return f"OpenSSL refused the pair: {exc}"
        return LoadedChain(digest(cert_pem + key_pem), cert, _issuer(cert, self.paths.ca)), staging

    def _install(self, chain: LoadedChain, staging: Path) -> None:
        try:
            self.context.load_cert_chain(staging / "tls.crt", staging / "tls.key")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.current = chain

    def _poll(self) -> tuple[LoadedChain, Path] | str | None:
        """A new chain to install, what is wrong with the files, or None. A failure is reported
        only when the next poll finds it again: a writer caught between two files (or a swapped
        directory removed under us) is a moment, not an error."""
        try:
            cert_pem, key_pem = self._read()
        except OSError as exc:
            return self._confirmed(f"read:{exc}", f"cannot read {self.paths.directory}: {exc}")
        new = digest(cert_pem + key_pem)
        if (self.current is not None and new == self.current.digest) or new == self._rejected:
            self._suspect = None
            return None
        prepared = self._prepare(cert_pem, key_pem)
        if isinstance(prepared, str):
            failure = self._confirmed(new, prepared)
            if failure is not None:
                self._rejected = new
            return failure
        self._suspect = None
        return prepared

    def _confirmed(self, key: str, failure: str) -> str | None:
        if self._suspect == key:
            self._suspect = None
            return failure
        self._suspect = key
        return None

    async def check_once(self) -> bool:
        """Reload if the files changed; True when a new chain was installed."""
        started = time.perf_counter()
        prepared = await asyncio.to_thread(self._poll)
        if prepared is None:
            return False
        if isinstance(prepared, str):
            log.warning("certificate reload failed, still serving the previous chain: %s", prepared)
            if self.on_reload is not None:
                self.on_reload(None, prepared)
            return False
        self._install(*prepared)  # on the loop thread: never concurrently with a handshake
        assert self.current is not None
        log.info(
            "reloaded the serving certificate (serial %x, expires %s) in %.1f ms",
            self.current.cert.serial_number,
            self.current.cert.not_valid_after_utc,
            (time.perf_counter() - started) * 1000,
        )
        if self.on_reload is not None:
            self.on_reload(self.current, "")
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check_once()
            except Exception as exc:  # noqa: BLE001 - keep serving the current chain
                log.warning("certificate reload check failed: %s: %s", type(exc).__name__, exc)

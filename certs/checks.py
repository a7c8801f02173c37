"""The facts about a certificate that decide whether it can be served or trusted.

Shared by `inspect` (which reports them) and `rotate` (which renews what fails them), so that the
two can never disagree on what "needs renewal" means. Every check takes `now`: expiry is tested
with an injected clock, not by waiting.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509 import verification


def public_bytes(key: Any) -> bytes:
    der: bytes = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return der


def key_matches(cert: x509.Certificate, key: Any) -> bool:
    return key is not None and public_bytes(cert.public_key()) == public_bytes(key.public_key())


def is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def sans(cert: x509.Certificate) -> list[str]:
    try:
        extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *extension.get_values_for_type(x509.DNSName),
        *(str(ip) for ip in extension.get_values_for_type(x509.IPAddress)),
    ]


def missing_names(cert: x509.Certificate, names: Iterable[str]) -> list[str]:
    present = set(sans(cert))
    return [name for name in names if name not in present]


def valid_at(cert: x509.Certificate, when: dt.datetime) -> bool:
    return cert.not_valid_before_utc <= when < cert.not_valid_after_utc


def days_left(cert: x509.Certificate, now: dt.datetime) -> float:
    return (cert.not_valid_after_utc - now).total_seconds() / 86400


def _subject(name: str) -> x509.verification.Subject:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def chain_error(cert: x509.Certificate, trusted: Sequence[x509.Certificate], name: str, now: dt.datetime) -> str | None:
    """Why a TLS client trusting `trusted` would refuse `cert` for `name` at `now`; None if it accepts."""
    roots = [c for c in trusted if is_ca(c)]
    if not roots:
        return "no CA certificate to verify against"
    try:
        verifier = (
            verification.PolicyBuilder()
            .store(verification.Store(roots))
            .time(now)
            .build_server_verifier(_subject(name))
        )
        verifier.verify(cert, [])
    except verification.VerificationError as exc:
        return str(exc).split(" (encountered")[0].removeprefix("validation failed: ")
    return None

"""`certs inspect`: what is stored, whether it verifies, and whether the webhooks trust it.

The report is data (`Report`), rendered as text or JSON at the edge. `Report.ok` is False when the
serving pair does not match, the chain does not verify for the Service name, a webhook's caBundle
does not trust the serving certificate, or a certificate expires within the threshold: the exit
code a cron job or CI check needs before the API server starts failing admissions.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from cryptography import x509

from certs.checks import chain_error, days_left, is_ca, key_matches, missing_names, sans
from certs.material import Material, MaterialError, fingerprint, parse_certs


@dataclass(frozen=True)
class CertInfo:
    role: str  # "serving", "ca" (signing CA) or "ca (older)"
    subject: str
    issuer: str
    sans: list[str]
    not_before: str
    not_after: str
    days_left: float
    sha256: str


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Report:
    certificates: list[CertInfo]
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_json(self) -> str:
        return json.dumps(
            {
                "ok": self.ok,
                "certificates": [asdict(c) for c in self.certificates],
                "checks": [asdict(c) for c in self.checks],
            },
            indent=2,
        )

    def to_text(self) -> str:
        lines = []
        for cert in self.certificates:
            lines += [f"{cert.role}:", f"  subject    {cert.subject}", f"  issuer     {cert.issuer}"]
            if cert.sans:
                lines.append(f"  SANs       {', '.join(cert.sans)}")
            lines += [
                f"  valid      {cert.not_before} .. {cert.not_after} ({time_left(cert.days_left)})",
                f"  sha256     {cert.sha256[:32]}...",
            ]
        lines.append("checks:")
        lines += [f"  {'ok  ' if c.ok else 'FAIL'} {c.name}{': ' + c.detail if c.detail else ''}" for c in self.checks]
        lines.append("result: " + ("ok" if self.ok else "FAILED"))
        return "\n".join(lines)


def time_left(days: float) -> str:
    """`12 days left`, or `expired 41 days ago` (never a negative number of days left)."""
    if days < 0:
        ago = -days
        return f"expired {ago:.0f} days ago" if ago >= 1 else "expired today"
    return f"{days:.0f} days left"


def describe(cert: x509.Certificate, role: str, now: dt.datetime) -> CertInfo:
    return CertInfo(
        role=role,
        subject=cert.subject.rfc4514_string(),
        issuer=cert.issuer.rfc4514_string(),
        sans=sans(cert),
        not_before=f"{cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}",
        not_after=f"{cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}",
        days_left=round(days_left(cert, now), 1),
        sha256=fingerprint(cert),
    )


def _expiry(info: CertInfo, threshold_days: float) -> Check:
    ok = info.days_left >= threshold_days
    detail = time_left(info.days_left) + (
        "" if ok or info.days_left < 0 else f", under the {threshold_days:g}-day threshold"
    )
    return Check(f"{info.role} expiry", ok, detail)


def _bundle_checks(
    material: Material, configurations: Sequence[Mapping[str, Any]], name: str, now: dt.datetime
) -> list[Check]:
    checks = []
    for configuration in configurations:
        for webhook in configuration.get("webhooks") or ():
            label = f"caBundle of {configuration['metadata']['name']}/{webhook.get('name', '?')}"
            raw = (webhook.get("clientConfig") or {}).get("caBundle")
            try:
                trusted = parse_certs(base64.b64decode(raw), label) if raw else ()
            except (MaterialError, ValueError):
                checks.append(Check(label, False, "not a PEM bundle"))
                continue
            error = chain_error(material.cert, trusted, name, now) if trusted else "empty"
            checks.append(
                Check(
                    label,
                    error is None,
                    f"does not trust the serving certificate: {error}"
                    if error
                    else f"trusts the serving certificate ({len(trusted)} CA{'s' if len(trusted) > 1 else ''})",
                )
            )
    return checks


def inspect(
    material: Material,
    now: dt.datetime,
    *,
    name: str | None = None,
    required_names: Sequence[str] = (),
    configurations: Sequence[Mapping[str, Any]] = (),
    threshold_days: float = 30.0,
) -> Report:
    """Report on `material`; `name` is the host clients verify (default: the first SAN)."""
    name = name or (sans(material.cert) or ["localhost"])[0]
    serving = describe(material.cert, "serving", now)
    cas = [describe(ca, "ca" if i == 0 else "ca (older)", now) for i, ca in enumerate(material.ca_certs)]
    checks = [Check("serving key matches certificate", key_matches(material.cert, material.key))]
    if material.ca_key is not None:
        checks.append(Check("CA key matches CA certificate", key_matches(material.ca, material.ca_key)))
    checks.append(Check("CA is a CA", is_ca(material.ca)))
    error = chain_error(material.cert, material.ca_certs, name, now)
    checks.append(Check(f"chain verifies for {name}", error is None, error or ""))
    if missing := missing_names(material.cert, required_names):
        checks.append(Check("serving certificate names", False, f"lacks {', '.join(missing)}"))
    checks += [_expiry(serving, threshold_days), _expiry(cas[0], threshold_days)]
    checks += _bundle_checks(material, configurations, name, now)
    return Report([serving, *cas], checks)

"""What a rotation must change: a pure decision, made before anything is written.

Koordinator's rules (`pkg/webhook/util/controller/webhook_controller.go`, `util/writer/`): the
serving certificate is renewed when it no longer matches its key, does not chain to the CA, lacks a
name, or will not be valid 6 months from now; the CA is reused while it is still valid one year from
now. `certs rotate`, `serve --self-managed-certs` and `inspect`'s exit code all decide through
`plan_rotation`.

The trust bundle (`ca.crt` and every webhook's `caBundle`) holds the signing CA first, then every
older CA that has not expired: clients keep trusting servers that still present a certificate
from the old CA until it expires, and an expired CA is pruned instead of lingering forever.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cryptography import x509

from certs.checks import chain_error, is_ca, key_matches, missing_names, valid_at
from certs.generate import DEFAULT_VALIDITY, generate_ca, generate_serving_cert
from certs.material import Material, fingerprint

SERVING_RENEW_BEFORE = dt.timedelta(days=182)  # Koordinator: valid 6 months from now
CA_RENEW_BEFORE = dt.timedelta(days=365)  # Koordinator: CA reused if valid one year from now


@dataclass(frozen=True)
class Policy:
    names: tuple[str, ...]  # SANs the serving certificate must carry; the first is its CN
    validity: dt.timedelta = DEFAULT_VALIDITY
    ca_validity: dt.timedelta = DEFAULT_VALIDITY
    renew_before: dt.timedelta = SERVING_RENEW_BEFORE
    ca_renew_before: dt.timedelta = CA_RENEW_BEFORE
    key_type: str = "rsa2048"

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("at least one name is needed for the serving certificate")
        if self.validity <= self.renew_before:
            raise ValueError(
                f"validity ({self.validity.days}d) must exceed renew-before "
                f"({self.renew_before.days}d), or every run renews"
            )
        if self.ca_validity <= self.ca_renew_before:
            raise ValueError(
                f"CA validity ({self.ca_validity.days}d) must exceed CA renew-before "
                f"({self.ca_renew_before.days}d), or every run renews the CA"
            )


@dataclass(frozen=True)
class Plan:
    material: Material
    new_ca: bool
    new_cert: bool
    reasons: tuple[str, ...] = field(default=())

    @property
    def renews(self) -> bool:
        return self.new_ca or self.new_cert


def ca_problem(current: Material | None, policy: Policy, now: dt.datetime) -> str | None:
    if current is None:
        return "no certificates yet"
    if current.ca_key is None or not key_matches(current.ca, current.ca_key):
        return "the CA private key is missing or does not match the CA"
    if not is_ca(current.ca):
        return "the CA certificate is not a CA"
    if not valid_at(current.ca, now + policy.ca_renew_before):
        return f"the CA expires within {policy.ca_renew_before.days} days ({current.ca.not_valid_after_utc:%Y-%m-%d})"
    return None


def serving_problem(current: Material, policy: Policy, now: dt.datetime) -> str | None:
    if not key_matches(current.cert, current.key):
        return "the serving key does not match the serving certificate"
    if error := chain_error(current.cert, [current.ca], policy.names[0], now):
        return f"the serving certificate does not verify against the CA: {error}"
    if missing := missing_names(current.cert, policy.names):
        return f"the serving certificate lacks {', '.join(missing)}"
    if not valid_at(current.cert, now + policy.renew_before):
        return (
            f"the serving certificate expires within {policy.renew_before.days} days "
            f"({current.cert.not_valid_after_utc:%Y-%m-%d})"
        )
    return None


def trust_bundle(
    signing: x509.Certificate, others: Iterable[x509.Certificate], now: dt.datetime
) -> tuple[x509.Certificate, ...]:
    """`signing` first, then each other CA not yet expired, without duplicates."""
    bundle = {fingerprint(signing): signing}
    for cert in others:
        if is_ca(cert) and cert.not_valid_after_utc > now:
            bundle.setdefault(fingerprint(cert), cert)
    return tuple(bundle.values())


def plan_rotation(
    current: Material | None,
    policy: Policy,
    now: dt.datetime,
    *,
    also_trusted: Sequence[x509.Certificate] = (),
    force: bool = False,
    force_ca: bool = False,
) -> Plan:
    """The material to store after this run; `also_trusted` are CAs found in webhook caBundles."""
    reasons: list[str] = []
    problem = (
        "renewal of the CA was requested" if force_ca and current is not None else ca_problem(current, policy, now)
    )
    if problem is None and current is not None:
        ca_key, ca_cert = current.ca_key, current.ca
    else:
        reasons.append(f"new CA: {problem}")
        ca_key, ca_cert = generate_ca(now, policy.ca_validity, policy.key_type)
    new_ca = problem is not None
    serving = None
    if not new_ca and current is not None:
        serving = "renewal was requested" if force else serving_problem(current, policy, now)
    if new_ca or serving is not None:
        reasons.append(f"new serving certificate: {serving or 'the CA is new'}")
        key, cert = generate_serving_cert(ca_key, ca_cert, policy.names, now, policy.validity, policy.key_type)
    else:
        assert current is not None
        key, cert = current.key, current.cert
    previous = [*(current.ca_certs if current else ()), *also_trusted]
    material = Material(ca_key=ca_key, ca_certs=trust_bundle(ca_cert, previous, now), cert=cert, key=key)
    return Plan(material, new_ca=new_ca, new_cert=new_ca or serving is not None, reasons=tuple(reasons))

"""Koordinator's renewal rules, decided with an injected clock: no test waits for a certificate to expire."""

from __future__ import annotations

import datetime as dt

import pytest

from certs.generate import generate_material, service_names
from certs.material import Material, fingerprint
from certs.plan import Policy, plan_rotation, trust_bundle
from tests.certs.conftest import DAY, NOW

NAMES = service_names("svc", "ns")
POLICY = Policy(names=NAMES)


def fingerprints(material: Material) -> list[str]:
    return [fingerprint(c) for c in material.ca_certs]


@pytest.fixture(scope="module")
def current() -> Material:
    """A CA valid for 3 years and a serving certificate valid for 1 year, issued at NOW."""
    return generate_material(NAMES, NOW, ca_validity=3 * 365 * DAY, validity=365 * DAY)


def test_nothing_is_renewed_while_both_certificates_have_time_left(current: Material) -> None:
    plan = plan_rotation(current, POLICY, NOW + 30 * DAY)
    assert not plan.renews and plan.reasons == ()
    assert plan.material == current


def test_the_serving_certificate_is_renewed_once_it_has_under_six_months_left(current: Material) -> None:
    assert not plan_rotation(current, POLICY, NOW + 365 * DAY - 183 * DAY).renews
    plan = plan_rotation(current, POLICY, NOW + 365 * DAY - 181 * DAY)
    assert plan.new_cert and not plan.new_ca
    assert "expires within 182 days" in plan.reasons[0]
    assert plan.material.ca == current.ca and plan.material.cert != current.cert
    assert plan.material.cert.not_valid_after_utc > current.cert.not_valid_after_utc


def test_the_ca_is_renewed_once_it_has_under_a_year_left_and_the_old_one_stays_trusted(current: Material) -> None:
    now = NOW + 2 * 365 * DAY + DAY  # under a year left on the CA
    plan = plan_rotation(current, POLICY, now)
    assert plan.new_ca and plan.new_cert
    assert "new CA: the CA expires within 365 days" in plan.reasons[0]
    assert fingerprints(plan.material)[1:] == [fingerprint(current.ca)]  # new first, old still trusted
    plan.material.cert.verify_directly_issued_by(plan.material.ca)


def test_an_expired_ca_is_pruned_from_the_trust_bundle(current: Material) -> None:
    rotated = plan_rotation(current, POLICY, NOW + 2 * 365 * DAY + DAY).material
    assert len(rotated.ca_certs) == 2
    later = plan_rotation(rotated, POLICY, current.ca.not_valid_after_utc + DAY)
    assert not later.renews
    assert fingerprints(later.material) == [fingerprint(rotated.ca)]


def test_trust_bundle_keeps_the_signing_ca_first_and_drops_duplicates(current: Material) -> None:
    other = generate_material(NAMES, NOW).ca
    bundle = trust_bundle(other, [current.ca, other, current.ca, current.cert], NOW)
    assert [fingerprint(c) for c in bundle] == [fingerprint(other), fingerprint(current.ca)]  # the leaf is no CA


@pytest.mark.parametrize(
    "breakage, reason",
    [
        ("swapped key", "serving key does not match"),
        ("other CA", "does not verify against the CA"),
        ("missing name", "lacks extra.example"),
    ],
)
def test_a_broken_serving_certificate_is_renewed_under_the_same_ca(
    current: Material, breakage: str, reason: str
) -> None:
    policy = POLICY
    stranger = generate_material(NAMES, NOW)
    if breakage == "swapped key":
        material = Material(current.ca_key, current.ca_certs, current.cert, stranger.key)
    elif breakage == "other CA":
        material = Material(current.ca_key, current.ca_certs, stranger.cert, stranger.key)
    else:
        material, policy = current, Policy(names=(*NAMES, "extra.example"))
    plan = plan_rotation(material, policy, NOW)
    assert plan.new_cert and not plan.new_ca and reason in plan.reasons[0]
    assert plan.material.ca == current.ca


def test_without_the_ca_key_a_new_ca_is_made(current: Material) -> None:
    public_only = Material(None, current.ca_certs, current.cert, current.key)
    plan = plan_rotation(public_only, POLICY, NOW)
    assert plan.new_ca and "private key is missing" in plan.reasons[0]


def test_forced_renewals(current: Material) -> None:
    assert plan_rotation(current, POLICY, NOW, force=True).new_cert
    assert not plan_rotation(current, POLICY, NOW, force=True).new_ca
    assert plan_rotation(current, POLICY, NOW, force_ca=True).new_ca


def test_a_policy_that_would_renew_on_every_run_is_refused() -> None:
    with pytest.raises(ValueError, match="must exceed renew-before"):
        Policy(names=NAMES, validity=dt.timedelta(days=90))

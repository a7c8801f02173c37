"""`certs inspect` fails (exit 1) on what would break admissions: untrusting caBundles, near expiry, bad chains."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from certs.generate import generate_material, service_names
from certs.inspect import inspect
from certs.kube import Cluster
from certs.material import Material, pem_certs, write_directory
from certs.plan import Policy
from certs.rotate import Targets, rotate
from colocate.main import main
from tests.certs.conftest import DAY, NOW
from tests.support.apiserver import ApiServer

NAMES = service_names("koordinator-webhook-service", "koordinator-system")
HOST = "koordinator-webhook-service.koordinator-system.svc"


@pytest.fixture(scope="module")
def material() -> Material:
    return generate_material(NAMES, NOW, validity=365 * DAY)


def failed(report) -> list[str]:
    return [check.name for check in report.checks if not check.ok]


def test_a_fresh_pair_passes_every_check(material: Material) -> None:
    report = inspect(material, NOW, name=HOST, required_names=NAMES)
    assert report.ok, report.to_text()
    assert [c.role for c in report.certificates] == ["serving", "ca"]
    assert HOST in report.certificates[0].sans and report.certificates[0].days_left == 365.0


def test_expiry_within_the_threshold_fails(material: Material) -> None:
    report = inspect(material, NOW + 350 * DAY, name=HOST, threshold_days=30)
    assert failed(report) == ["serving expiry"]
    assert "15 days left, under the 30-day threshold" in report.to_text()


def test_an_expired_certificate_fails_the_chain_too(material: Material) -> None:
    assert failed(inspect(material, NOW + 400 * DAY, name=HOST)) == [f"chain verifies for {HOST}", "serving expiry"]


def test_a_serving_certificate_from_another_ca_fails_the_chain(material: Material) -> None:
    stranger = generate_material(NAMES, NOW)
    mixed = Material(material.ca_key, material.ca_certs, stranger.cert, stranger.key)
    assert failed(inspect(mixed, NOW, name=HOST)) == [f"chain verifies for {HOST}"]


def test_a_caBundle_that_does_not_trust_the_serving_certificate_is_caught(material: Material) -> None:
    other_ca = generate_material(NAMES, NOW).ca
    good, bad = (base64.b64encode(pem_certs([ca])).decode() for ca in (material.ca, other_ca))
    configurations = [
        {
            "metadata": {"name": "koordinator-mutating-webhook-configuration"},
            "webhooks": [
                {"name": "a", "clientConfig": {"caBundle": good}},
                {"name": "b", "clientConfig": {"caBundle": bad}},
                {"name": "c", "clientConfig": {}},
            ],
        }
    ]
    report = inspect(material, NOW, name=HOST, configurations=configurations)
    assert failed(report) == [
        "caBundle of koordinator-mutating-webhook-configuration/b",
        "caBundle of koordinator-mutating-webhook-configuration/c",
    ]
    assert "does not trust the serving certificate" in report.to_text()


async def test_the_cli_exits_1_when_a_webhook_does_not_trust_the_served_certificate(
    api: ApiServer, cluster: Cluster, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await asyncio.to_thread(rotate, Targets(cluster=cluster), Policy(names=NAMES), NOW)
    args = ["certs", "inspect", "--kubeconfig", str(kubeconfig), "--at", "2030-02-01", "-o", "json"]
    assert await asyncio.to_thread(main, args) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True

    stranger = base64.b64encode(pem_certs([generate_material(NAMES, NOW).ca])).decode()
    api.store.patch(
        api.by_kind["ValidatingWebhookConfiguration"],
        "",
        "koordinator-validating-webhook-configuration",
        [{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": stranger}],
        "json",
    )
    assert await asyncio.to_thread(main, args) == 1
    report = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in report["checks"] if not c["ok"]] == [
        "caBundle of koordinator-validating-webhook-configuration/vpod.koordinator.sh"
    ]


def test_the_cli_reads_a_directory_and_flags_near_expiry(
    material: Material, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_directory(tmp_path, material)
    common = ["certs", "inspect", "--cert-dir", str(tmp_path)]
    assert main([*common, "--at", "2030-06-01"]) == 0
    assert main([*common, "--at", "2030-12-20", "--threshold-days", "30"]) == 1
    assert "result: FAILED" in capsys.readouterr().out
    assert main(["certs", "inspect", "--cert-dir", str(tmp_path / "missing")]) == 2

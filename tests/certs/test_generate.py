"""`certs generate`: the names kube-apiserver and local clients use, key types, the on-disk layout."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from certs.checks import sans
from certs.generate import generate_material, service_names
from certs.material import read_directory, write_directory
from colocate.main import main
from tests.certs.conftest import NOW
from tests.support.webhook_manifests import MANIFESTS


def test_the_serving_certificate_names_the_service_every_way_plus_local_names() -> None:
    material = generate_material(service_names("svc", "ns", ["extra.example", "10.0.0.7"]), NOW)
    assert sans(material.cert) == [
        "svc",
        "svc.ns",
        "svc.ns.svc",
        "svc.ns.svc.cluster.local",
        "extra.example",
        "localhost",
        "10.0.0.7",
        "127.0.0.1",
    ]
    assert material.cert.not_valid_before_utc == material.ca.not_valid_before_utc


@pytest.mark.parametrize(
    "key_type, key_class, size", [("rsa2048", rsa.RSAPrivateKey, 2048), ("ecdsa-p256", ec.EllipticCurvePrivateKey, 256)]
)
def test_key_types(key_type: str, key_class: type, size: int) -> None:
    material = generate_material(["svc"], NOW, key_type=key_type)
    assert isinstance(material.key, key_class) and material.key.key_size == size
    assert isinstance(material.ca_key, key_class)


def test_the_serving_certificate_never_outlives_its_ca() -> None:
    material = generate_material(["svc"], NOW, ca_validity=dt.timedelta(days=400), validity=dt.timedelta(days=900))
    assert material.cert.not_valid_after_utc == material.ca.not_valid_after_utc


def test_a_directory_switches_all_files_at_once_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("a stray file from an older writer")
    first, second = generate_material(["svc"], NOW), generate_material(["svc"], NOW)
    assert write_directory(tmp_path, first)
    assert not write_directory(tmp_path, first)
    assert write_directory(tmp_path, second)
    assert read_directory(tmp_path).files() == second.files()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:1] == ["..data"] and names[2:] == ["ca.crt", "ca.key", "tls.crt", "tls.key"]  # old version gone
    assert all((tmp_path / n).is_symlink() for n in names if not n.startswith("..version"))
    assert oct((tmp_path / "tls.key").stat().st_mode & 0o777) == "0o600"


def test_the_cli_writes_a_directory_and_refuses_to_overwrite_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "certs",
        "generate",
        "--cert-dir",
        str(tmp_path),
        "--cert-service",
        "svc",
        "--cert-namespace",
        "ns",
        "--validity",
        "365",
        "--key-type",
        "ecdsa-p256",
    ]
    assert main(args) == 0
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert "svc.ns.svc" in sans(cert)
    assert main(args) == 2 and "certs rotate" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


def test_rbac_grants_what_rotation_and_leader_election_use() -> None:
    documents = list(yaml.safe_load_all((MANIFESTS / "deploy" / "rbac.yaml").read_text()))
    rules = [r for d in documents if d["kind"] in ("Role", "ClusterRole") for r in d["rules"]]

    def allowed(group: str, resource: str, verb: str, name: str) -> bool:
        return any(
            group in r["apiGroups"]
            and resource in r["resources"]
            and verb in r["verbs"]
            and name in r.get("resourceNames", [name])
            for r in rules
        )

    needed = [("", "secrets", v, "koordinator-webhook-certs") for v in ("get", "create", "update", "delete")]
    needed += [("coordination.k8s.io", "leases", v, "colocate-webhook-certs") for v in ("get", "create", "update")]
    needed += [
        ("admissionregistration.k8s.io", f"{kind}webhookconfigurations", v, f"koordinator-{kind}-webhook-configuration")
        for kind in ("mutating", "validating")
        for v in ("get", "patch")
    ]
    assert [n for n in needed if not allowed(*n)] == []


def test_the_certificates_serve_generates_pass_certs_inspect(tmp_path, capsys):
    """`serve --cert-dir` generates them on first start; `certs inspect` and `rotate` then agree."""
    from certs.generate import ensure_serving_certs
    from colocate.main import main

    ensure_serving_certs(tmp_path / "certs")
    assert main(["certs", "inspect", "--cert-dir", str(tmp_path / "certs")]) == 0
    assert main(["certs", "rotate", "--cert-dir", str(tmp_path / "certs")]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_an_expired_certificate_says_when_it_expired_not_negative_days_left(tmp_path, capsys):
    from certs.generate import ensure_serving_certs
    from colocate.main import main

    ensure_serving_certs(tmp_path / "certs")
    assert main(["certs", "inspect", "--cert-dir", str(tmp_path / "certs"), "--at", "2050-01-01"]) == 1
    out = capsys.readouterr().out
    assert "FAIL serving expiry: expired " in out and " days ago" in out and "-" not in out.split("days")[0][-8:]
    assert "days left" not in out


def test_a_new_certificate_directory_is_not_world_writable_whatever_the_umask(tmp_path: Path) -> None:
    import os

    previous = os.umask(0)
    try:
        write_directory(tmp_path / "certs", generate_material(("svc",), NOW))
    finally:
        os.umask(previous)
    assert (tmp_path / "certs").stat().st_mode & 0o777 == 0o755

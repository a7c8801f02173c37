"""Writing a certificate directory removes only its own previous version: a `..data` symlink planted
to point elsewhere (outside the directory, at a symlink, at a directory that is not `..version-*`)
is replaced, and what it pointed at is left alone. Covers `certs generate --force` and `serve`'s
certificate auto-generation (`ensure_serving_certs`), which both write through `write_directory`."""

from __future__ import annotations

from pathlib import Path

import pytest

from certs.generate import ensure_serving_certs
from certs.material import DATA_LINK
from colocate.main import main

GENERATE = ["certs", "generate", "--cert-service", "svc", "--cert-namespace", "ns", "--force"]


def victim_tree(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "precious.txt").write_text("keep me\n")
    (path / "sub").mkdir()
    (path / "sub" / "more.txt").write_text("and me\n")
    return path


def plant(cert_dir: Path, target: str) -> None:
    cert_dir.mkdir(exist_ok=True)
    (cert_dir / DATA_LINK).symlink_to(target)


@pytest.mark.parametrize(
    "target",
    [
        "../victim",  # a directory outside
        "{victim}",  # the same, absolute
        "..version-evil",  # a ..version-* name that is a symlink out
        "not-a-version",  # a directory inside that is not ours
    ],
)
def test_generate_force_never_removes_what_a_planted_data_link_points_at(tmp_path: Path, target: str) -> None:
    victim = victim_tree(tmp_path / "victim")
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    if target == "..version-evil":
        (cert_dir / target).symlink_to(victim)
    if target == "not-a-version":
        victim = victim_tree(cert_dir / target)
    plant(cert_dir, target.format(victim=victim))

    assert main([*GENERATE, "--cert-dir", str(cert_dir)]) == 0

    assert (victim / "precious.txt").read_text() == "keep me\n"
    assert (victim / "sub" / "more.txt").read_text() == "and me\n"
    assert (cert_dir / "tls.crt").read_bytes().startswith(b"-----BEGIN CERTIFICATE")


def test_serve_auto_generation_never_removes_what_a_planted_data_link_points_at(tmp_path: Path) -> None:
    victim = victim_tree(tmp_path / "victim")
    cert_dir = tmp_path / "certs"
    plant(cert_dir, str(victim))
    _, created = ensure_serving_certs(cert_dir)
    assert created and (victim / "precious.txt").is_file()


def test_our_own_previous_version_is_still_removed(tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    assert main([*GENERATE, "--cert-dir", str(cert_dir)]) == 0
    assert main([*GENERATE, "--cert-dir", str(cert_dir)]) == 0
    versions = sorted(p.name for p in cert_dir.iterdir() if p.name.startswith("..version-"))
    assert len(versions) == 1 and (cert_dir / DATA_LINK).readlink().name == versions[0]

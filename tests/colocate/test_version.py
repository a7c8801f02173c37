"""colocate's version is written once (colocate/__init__.py); everything that shows one shows it."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
import yaml

import colocate
from colocate.main import main
from tests.support.containerfile import parse
from tests.support.paths import REPO


def test_colocate_version_prints_the_one_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"colocate {colocate.__version__}\n"


def test_the_wheel_takes_its_version_from_the_package_not_a_second_literal() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "colocate.__version__"}
    assert metadata.version("colocate") == colocate.__version__  # what pip installed from it


def test_the_image_label_and_every_image_tag_are_the_version() -> None:
    final = parse((REPO / "Containerfile").read_text())[-1]
    assert final.labels["org.opencontainers.image.version"] == colocate.__version__
    tags = re.findall(r"colocate:(\d+\.\d+\.\d+)", (REPO / "Containerfile").read_text())
    tags += re.findall(r"colocate:(\d+\.\d+\.\d+)", (REPO / "docs" / "deploy.md").read_text())
    for kustomization in REPO.glob("manifests/**/kustomization.yaml"):
        images = (yaml.safe_load(kustomization.read_text()) or {}).get("images") or []
        tags += [image["newTag"] for image in images if image.get("name") == "colocate" and "newTag" in image]
    assert tags and set(tags) == {colocate.__version__}

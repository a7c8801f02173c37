"""The public surface is pinned: docs/plugins.md lists exactly what each `colocate.api` module
exports, and everything it lists for the test kit exists."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.support.paths import REPO

ROW = re.compile(r"^\| `(colocate\.(?:api|testing)[\w.]*)` \| (.*) \|$")
NAME = re.compile(r"`([A-Za-z_][\w]*)`")


def documented() -> dict[str, set[str]]:
    rows = (ROW.match(line) for line in (REPO / "docs" / "plugins.md").read_text().splitlines())
    return {m.group(1): set(NAME.findall(m.group(2))) for m in rows if m}


def test_every_stable_module_has_a_row() -> None:
    assert set(documented()) == {
        "colocate.api",
        "colocate.api.scheduler",
        "colocate.api.koordlet",
        "colocate.api.descheduler",
        "colocate.api.webhook",
        "colocate.testing.builders",
        "colocate.testing.commands",
        "colocate.testing.scheduler",
    }


@pytest.mark.parametrize("module", [m for m in documented() if m.startswith("colocate.api")])
def test_an_api_module_exports_exactly_what_the_page_lists(module: str) -> None:
    assert set(importlib.import_module(module).__all__) == documented()[module]


@pytest.mark.parametrize("module", [m for m in documented() if m.startswith("colocate.testing")])
def test_the_test_kit_has_what_the_page_lists(module: str) -> None:
    loaded = importlib.import_module(module)
    assert {name for name in documented()[module] if not hasattr(loaded, name)} == set()

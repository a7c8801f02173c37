"""The shipped example (examples/whatif) and a way to run `colocate whatif` as a user does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from colocate.main import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "whatif"
#: from midnight to past the noon peak of the example's web tier, 1-minute steps
WINDOW = ["--duration", "13h"]

Whatif = Callable[..., tuple[int, str, str]]


@pytest.fixture
def whatif(capsys: pytest.CaptureFixture[str]) -> Whatif:
    def run(*args: str) -> tuple[int, str, str]:
        code = main(["whatif", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def example_run(whatif: Whatif) -> Callable[..., dict[str, Any]]:
    def run(*extra: str) -> dict[str, Any]:
        code, out, err = whatif(
            "--cluster",
            str(EXAMPLE / "cluster"),
            "--workload",
            str(EXAMPLE / "workload.yaml"),
            *WINDOW,
            "-o",
            "json",
            "--node-timelines",
            *extra,
        )
        assert code == 0, err
        document: dict[str, Any] = json.loads(out)
        return document

    return run

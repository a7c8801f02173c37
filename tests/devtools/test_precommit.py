"""The pre-commit hooks run the checks CI runs (.ci/run), so a commit that passes them passes CI's."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_every_check_of_ci_has_a_pre_commit_hook() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    entries = {hook["id"]: hook["entry"].split()[0] for repo in config["repos"] for hook in repo["hooks"]}
    assert entries == {"ruff": "ruff", "ruff-format": "ruff", "mypy": "mypy", "lint-imports": "lint-imports"}
    ci = (REPO / ".ci" / "run").read_text()
    for command in ("ruff format --check", "ruff check", "mypy", "lint-imports --no-cache"):
        assert f".venv/bin/{command}" in ci

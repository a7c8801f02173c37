"""Dependencies point inward, enforced by the import contracts in pyproject.toml.

The contracts (run by `lint-imports`, and here so a plain `pytest` catches a violation too):
the entry point composes independent components on the shared core (`colocate` > `webhook` |
`scheduler_plugins` > `certs` > `cluster` > `policies`); no package has import cycles; `policies`
imports only an allowlist (parsing and arithmetic, nothing with I/O); aiohttp stays in the HTTP
adapters (the webhook port's, the extender's, the koordlet's); nothing frames HTTP by hand
(`httptools`, `h11`) or reaches into asyncio's internals (`asyncio.sslproto`); `cli` (the
command-line conventions every component uses) knows none of them; `colocate.whatif` imports of
`scheduler_plugins` only the components' round façades (and the shared clock).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def lint_imports() -> str:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert found, "import-linter is part of the test dependencies"
    return found


def test_every_import_contract_is_kept() -> None:
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_contract_breaks_when_policies_imports_io(tmp_path: Path) -> None:
    """The allowlist is live: a copy of the tree where policies imports `socket` fails it."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "__pycache__", "manifests"))
    with (copy / "policies" / "apis" / "kinds.py").open("a") as kinds:
        kinds.write("\nimport socket  # noqa\n")
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "policies.apis.kinds imports socket" in result.stdout


def test_a_contract_breaks_when_anything_imports_asyncio_internals(tmp_path: Path) -> None:
    """The webhook port once subclassed asyncio's private SSLProtocol: the contract refuses it."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "__pycache__", "manifests"))
    with (copy / "webhook" / "gate.py").open("a") as gate:
        gate.write("\nfrom asyncio import sslproto  # noqa\n")
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "webhook.gate imports asyncio.sslproto" in result.stdout


def test_an_import_under_type_checking_counts_for_the_contracts(tmp_path: Path) -> None:
    """`exclude_type_checking_imports = false`: a cycle hidden behind `if TYPE_CHECKING:` (as
    loadaware/vector.py once hid its use of the plugin's private methods) breaks the contract."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "__pycache__", "manifests"))
    with (copy / "scheduler_plugins/scheduler/plugins/loadaware/vector.py").open("a") as batch:
        batch.write(
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from scheduler_plugins.scheduler.plugins.loadaware import plugin  # noqa\n"
        )
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert (
        result.returncode != 0
        and "No cycles are allowed in scheduler_plugins.scheduler.plugins.loadaware" in result.stdout
    )


def test_an_inner_layer_contract_breaks_when_a_module_imports_upwards(tmp_path: Path) -> None:
    """Each component's inner order is a contract: the scheduler's framework importing its
    extender (the HTTP adapter above it) fails the scheduler's layers, by name."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "__pycache__", "manifests"))
    with (copy / "scheduler_plugins/scheduler/framework/__init__.py").open("a") as framework:
        framework.write("\nimport scheduler_plugins.scheduler.extender  # noqa\n")
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "scheduler: cli > extender" in result.stdout and "BROKEN" in result.stdout


def test_whatif_importing_a_components_internals_breaks_the_facades_contract(tmp_path: Path) -> None:
    """whatif composes the components through their round façades only: a copy of the tree where it
    imports the koordlet's QoS framework directly fails the contract, naming the import."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "__pycache__", "manifests"))
    with (copy / "colocate" / "whatif" / "usage.py").open("a") as usage:
        usage.write("\nfrom scheduler_plugins.koordlet.framework import QOSManager  # noqa\n")
    result = subprocess.run([lint_imports(), "--no-cache"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "colocate.whatif.usage imports scheduler_plugins.koordlet.framework" in result.stdout
    assert "not one of the façades" in result.stdout

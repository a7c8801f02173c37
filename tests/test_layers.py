"""Dependencies point inward: the policy engine does no I/O and knows no server; certs know no webhook."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "policies": {"webhook", "certs", "scheduler_plugins", "aiohttp", "kubernetes", "prometheus_client", "socket", "asyncio"},
    "certs": {"webhook", "scheduler_plugins"},
    # the command-line conventions every component uses: they know none of them
    "cli": {"colocate", "webhook", "scheduler_plugins", "certs", "cluster", "policies"},
}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_inward(package):
    offenders = {str(path.relative_to(REPO)): sorted(imported_modules(path) & FORBIDDEN[package])
                 for path in (REPO / package).rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}

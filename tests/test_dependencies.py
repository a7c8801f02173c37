"""What the README's install (`pip install .`, no extras) brings is enough for every documented
command: every third-party module that colocate's shipped packages import, at the top or inside a
function (`whatif --report` imports plotly only when it draws), is a default dependency."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import REPO

SHIPPED = ("colocate", "webhook", "policies", "scheduler_plugins", "certs")
#: imported only where they are present, with a fallback that behaves the same
OPTIONAL = {"uvloop": "asyncio's own loop where uvloop is not installed (Windows)"}


def imported_top_level_names() -> dict[str, Path]:
    """Each top-level module name imported anywhere in the shipped packages, with one file importing it."""
    found: dict[str, Path] = {}
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.partition(".")[0], path)
    return found


def default_dependencies() -> set[str]:
    """The distributions `pip install .` installs: the declared dependencies and theirs, without extras."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    found: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = canonicalize_name(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        found.add(name)
        try:
            wanted.extend(Requirement(r) for r in metadata.requires(name) or ())
        except metadata.PackageNotFoundError:
            pass  # not installed on this platform (uvloop on Windows)
    return found


def test_every_third_party_module_colocate_imports_is_a_default_dependency() -> None:
    distributions = metadata.packages_distributions()
    ours = set(SHIPPED) | {"tests", "benchmarks", "devtools"}
    installed = default_dependencies()
    missing = {}
    for name, path in imported_top_level_names().items():
        if name in sys.stdlib_module_names or name in ours or name in OPTIONAL or name == "__future__":
            continue
        provided_by = {canonicalize_name(d) for d in distributions.get(name, [name])}
        if not provided_by & installed:
            missing[name] = str(path.relative_to(REPO))
    assert missing == {}, "imported, but `pip install .` does not install it"

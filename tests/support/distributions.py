"""Installed distributions made at test time: a `.dist-info` (METADATA, entry_points.txt) and its
modules in a directory put on sys.path, which is exactly what `importlib.metadata` scans for
installed distributions (a wheel installs the same files into site-packages). The examples under
`examples/plugins/` are "installed" this way from their own pyproject.toml and source tree.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from colocate.cluster import plugins
from tests.support.paths import REPO

EXAMPLES = REPO / "examples" / "plugins"


class Site:
    """A directory on sys.path holding the distributions a test installs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: list[str] = []
        #: what a child process needs on PYTHONPATH to see the same distributions
        self.paths: list[str] = [str(root)]

    def install(
        self,
        distribution: str,
        entry_points: Mapping[str, Mapping[str, str]],
        modules: Mapping[str, str] | None = None,
        source: Path | None = None,
    ) -> None:
        """`entry_points`: group -> {name: "module:attr"}; `modules`: module name -> source text;
        `source`: a directory to put on sys.path too (an example's `src`)."""
        info = self.root / f"{distribution.replace('-', '_')}-0.1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1.0\n")
        lines = []
        for group, names in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{name} = {value}" for name, value in names.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for module, text in (modules or {}).items():
            (self.root / f"{module}.py").write_text(text)
            self.modules.append(module)
        if source is not None:
            sys.path.insert(0, str(source))
            self.paths.append(str(source))
            self.modules += [p.name for p in source.iterdir() if p.is_dir()]
        importlib.invalidate_caches()  # the path finders' directory listings, and importlib.metadata's
        plugins.rescan()

    def install_example(self, directory: str) -> str:
        """Install `examples/plugins/<directory>` from its pyproject.toml; its distribution's name."""
        project = tomllib.loads((EXAMPLES / directory / "pyproject.toml").read_text())["project"]
        self.install(project["name"], project["entry-points"], source=EXAMPLES / directory / "src")
        return str(project["name"])


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    root = tmp_path / "site-packages"
    root.mkdir()
    saved = list(sys.path)
    sys.path.insert(0, str(root))
    installed = Site(root)
    plugins.rescan()
    try:
        yield installed
    finally:
        sys.path[:] = saved
        for module in installed.modules:
            for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
                del sys.modules[name]
        plugins.rescan()

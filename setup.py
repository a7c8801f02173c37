"""Builds colocate; compiles groups of the modules `colocate/cluster/compiled.py` lists with mypyc.

Everything else is in pyproject.toml. The compiled modules are optional extensions: without a C
compiler (or Python's headers) the build warns and installs the plain modules. Editable installs are
not compiled unless COLOCATE_COMPILE=1 (an edit must take effect); COLOCATE_COMPILE=0 never compiles.
COLOCATE_COMPILE_GROUPS (comma-separated: admission, whatif) chooses the groups; the default,
`DEFAULT_GROUPS`, is the admission hot path only, so that the README's first command stays under two
minutes on two cores (benchmarks/quickstart_bench.py says what was measured, and what was not chosen).
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


#: the commands that build the extensions; the others (egg_info, dist_info, sdist, ...) only
#: describe the project, and pip runs them before any build: they must not run mypyc
_BUILDS = ("bdist_wheel", "build", "build_ext", "install")


def _wanted() -> bool:
    choice = os.environ.get("COLOCATE_COMPILE", "auto")
    if choice == "0":
        return False
    if choice == "1":
        return any(command in sys.argv for command in (*_BUILDS, "editable_wheel", "develop"))
    return any(command in sys.argv for command in _BUILDS)


#: mypy's options for the compilation: not the project's configuration (strict, for `mypy` in CI),
#: and dependencies that are not installed where the wheel is built (pip's isolated build
#: environment holds setuptools and mypy only) typed as Any: calls into them stay calls
_MYPY_OPTIONS = ["--config-file=", "--ignore-missing-imports", "--follow-imports=silent"]


def _source(name: str) -> str:
    """The file of a dotted module name, relative to the root (a package's `__init__.py`)."""
    path = Path(*name.split("."))
    return str(path / "__init__.py") if (ROOT / path).is_dir() else str(path) + ".py"


def compiled_extensions() -> list:
    if not _wanted():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("colocate: mypyc is not installed; the compiled modules stay plain Python", file=sys.stderr)
        return []
    listed = runpy.run_path(str(ROOT / "colocate" / "cluster" / "compiled.py"))
    groups = os.environ.get("COLOCATE_COMPILE_GROUPS") or ",".join(listed["DEFAULT_GROUPS"])
    try:
        modules = listed["modules_of"](name.strip() for name in groups.split(",") if name.strip())
    except ValueError as exc:
        sys.exit(f"colocate: COLOCATE_COMPILE_GROUPS={groups}: {exc}")
    paths = [_source(name) for name in modules]
    extensions = mypycify([*_MYPY_OPTIONS, *paths], opt_level="3")
    for extension in extensions:
        extension.optional = True  # no compiler: warn and install the plain modules
    return extensions


setup(ext_modules=compiled_extensions())

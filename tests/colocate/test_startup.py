"""`colocate` imports a command group's modules only when that group runs: `colocate --version` and
`colocate certs inspect` must not pay for the Kubernetes client, the scheduler or whatif
(benchmarks/startup_bench.py measures what they cost)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from certs.generate import generate_material, utcnow
from certs.material import write_directory
from colocate.cli.parser import Parser
from colocate.main import GROUPS, build_parser
from tests.support.paths import REPO

#: modules a light command must not import: the API client, and other groups' heavy packages
HEAVY = ("kubernetes", "colocate.whatif", "scheduler_plugins.scheduler", "webhook.server", "numpy")


def imported_after(code: str) -> set[str]:
    """The top-level names of `HEAVY` that a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()[-1]
    modules = set(json.loads(out))
    return {heavy for heavy in HEAVY if heavy in modules}


def test_importing_the_console_script_imports_no_kubernetes_client() -> None:
    assert imported_after("import colocate.main") == set()


def test_version_imports_no_command_group() -> None:
    code = (
        "import contextlib, io\nfrom colocate.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['--version'])"
    )
    assert imported_after(code) == set()


def test_certs_inspect_of_a_directory_imports_only_what_it_inspects_with(tmp_path: Path) -> None:
    write_directory(tmp_path, generate_material(["colocate.example"], utcnow()))
    code = (
        "import contextlib, io\nfrom colocate.main import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main(['certs', 'inspect', '--cert-dir', {str(tmp_path)!r}])"
    )
    assert imported_after(code) == set()


@pytest.mark.parametrize(("module", "names"), GROUPS, ids=[module for module, _ in GROUPS])
def test_each_group_registers_exactly_the_commands_the_table_says(module: str, names: tuple[str, ...]) -> None:
    """`colocate X` imports only the group the table says owns X: a command the table misses would
    be unknown, one it misattributes would be parsed by the wrong group."""
    parser = Parser(prog="colocate")
    subparsers = parser.add_subparsers(dest="command")
    importlib.import_module(module).register_commands(subparsers)
    assert tuple(subparsers.choices) == names


def test_parsing_with_only_the_named_group_gives_what_the_whole_parser_gives() -> None:
    argv = ["--log-level", "debug", "certs", "inspect", "--cert-dir", "certs-local", "-o", "json"]
    whole, lazy = build_parser().parse_args(argv), build_parser(argv).parse_args(argv)
    assert {k: v for k, v in vars(whole).items() if k != "func"} == {k: v for k, v in vars(lazy).items() if k != "func"}
    assert isinstance(lazy, argparse.Namespace) and lazy.func.__qualname__ == whole.func.__qualname__

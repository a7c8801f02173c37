"""The commands the documentation shows are ones today's `colocate` accepts, and the README's two
set-up commands are the ones CI runs."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from colocate.main import build_parser
from tests.docs.markdown import REPO, Block, documents, split

SHELL = ("sh", "bash", "shell", "console")  # blocks of commands; `console` ones prefix them with `$ `
PLACEHOLDERS = ("...", "[", "<")  # an elided example, not a command to run


def commands(block: Block) -> list[list[str]]:
    """The `colocate ...` invocations of a shell or console block, as argument lists after `colocate`."""
    found: list[list[str]] = []
    if block.info not in SHELL:
        return found
    logical: list[str] = []
    for line in block.lines:
        logical.append(line.rstrip().removesuffix("\\"))
        if line.rstrip().endswith("\\"):
            continue
        text, logical = " ".join(logical).strip(), []
        if block.info == "console":
            if not text.startswith("$ "):
                continue  # output
            text = text[2:]
        for segment in (s for part in text.split("&&") for s in part.split("|")):
            if segment.split() and Path(segment.split()[0]).name == "colocate":
                found.append(shlex.split(segment, comments=True)[1:])
    return found


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in documents():
        for block in split(page.read_text(encoding="utf-8"))[1]:
            for argv in commands(block):
                if not any(mark in word for word in argv for mark in PLACEHOLDERS):
                    found.append((f"{page.relative_to(REPO)}: colocate {' '.join(argv)}", argv))
    return found


@pytest.mark.parametrize(("where", "argv"), documented_commands(), ids=[w for w, _ in documented_commands()])
def test_every_documented_command_parses(where: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: {capsys.readouterr().err.strip() or f'exit {exc.code}'}")


def test_the_documentation_shows_commands_of_every_group() -> None:
    groups = {argv[0] for _, argv in documented_commands()}
    assert {"serve", "apply", "certs", "scheduler", "koordlet", "descheduler"} <= groups


def quick_start() -> list[Block]:
    _, blocks = split((REPO / "README.md").read_text(encoding="utf-8"))
    return [block for block in blocks if block.heading == "Quick start"]


def test_the_readme_quick_start_is_two_commands_install_and_serve_then_the_tests() -> None:
    install, tests = quick_start()
    assert len(install.lines) == 1 and len(tests.lines) == 1
    assert install.lines[0].startswith("python3 -m venv .venv && .venv/bin/pip install . && ")
    assert commands(install)[0][0] == "serve"
    assert tests.lines == ("bash .ci/run",)


def test_ci_runs_the_test_command_the_readme_names() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    script = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert script[-1] == ".venv/bin/python -m pytest"
    assert f"`{script[-1]}`" in readme
    assert any("pip install" in line and "'.[test]'" in line for line in script), "the test extras"

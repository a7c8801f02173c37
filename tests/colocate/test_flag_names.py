"""Every flag a message names is a flag that exists: an error that sends the user to `--renew-before`
where there is none is worse than no hint at all.

The messages are collected from the code itself (every string literal, f-strings included, of
every module outside tests), so a new message is checked the day it is written.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from colocate.main import build_parser, main
from tests.support.paths import REPO

PACKAGES = ("certs", "cli", "cluster", "colocate", "policies", "scheduler_plugins", "webhook")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
#: flags of other programs a message may quote (kubectl's, say)
OTHER_PROGRAMS: frozenset[str] = frozenset({"--validate"})  # `kubectl apply --validate=strict`


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found |= option_strings(command)
        found.update(action.option_strings)
    return found


def named_flags() -> dict[str, list[str]]:
    """flag -> the places (file:line) whose string literals name it."""
    named: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for flag in FLAG.findall(node.value):
                        named.setdefault(flag, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    return named


def test_every_flag_a_message_or_help_names_exists() -> None:
    exists = option_strings(build_parser()) | OTHER_PROGRAMS
    named = named_flags()
    assert len(named) > 50  # the collection works: most messages name their flag
    assert {flag: places for flag, places in named.items() if flag not in exists} == {}


def test_the_collector_sees_a_flag_inside_an_f_string(tmp_path: Path) -> None:
    tree = ast.parse('f"--renew-before ({days}d): bad"')
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert FLAG.findall(" ".join(strings)) == ["--renew-before"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["certs", "generate", "--validity", "30"],
            "error: --validity 30d: must exceed 182d, the time before expiry at which `certs rotate` and "
            "`serve --self-managed-certs` renew, or every run renews\n",
        ),
        (
            ["certs", "rotate", "--validity", "300", "--renew-before", "400"],
            "error: --validity 300d: must exceed --renew-before (400d), or every run renews\n",
        ),
    ],
)
def test_a_validity_inside_the_renewal_window_names_only_real_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    assert main([*argv, "--cert-dir", str(tmp_path / "certs")]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", message)

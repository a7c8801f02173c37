"""The README's `--explain` sample is what the command prints: it starts where the output starts,
and every line it shows (`...` marks what it leaves out) comes in the output, in order."""

from __future__ import annotations

import shlex
import subprocess
import sys

from tests.docs.markdown import REPO, split


def sample() -> tuple[list[str], list[str]]:
    """The sample's command (after `colocate`) and the lines it shows of stderr."""
    _, blocks = split((REPO / "README.md").read_text(encoding="utf-8"))
    (block,) = [b for b in blocks if b.info == "console" and "--explain" in "\n".join(b.lines)]
    command, *shown = block.lines
    argv = shlex.split(command.removeprefix("$ "))[1:]
    return argv, shown


def test_the_readme_explain_sample_is_the_commands_output_from_its_first_line() -> None:
    argv, shown = sample()
    done = subprocess.run(
        [sys.executable, "-m", "colocate.main", *argv], cwd=REPO, capture_output=True, text=True, check=True
    )
    printed = done.stderr.splitlines()
    assert shown[0] == printed[0]
    at = 0
    for line in (s for s in shown if s.strip() != "..."):
        assert line in printed[at:], f"{line!r} is not in the output after line {at}"
        at = printed.index(line, at) + 1

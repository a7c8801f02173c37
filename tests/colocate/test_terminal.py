"""Colour and progress bars only where a person watches: on a terminal, and no colour with NO_COLOR.

Each command runs as a user runs it, in a child process whose stdout or stderr is a pseudo-terminal
(or a pipe, as in CI and `| less`).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

SUITE = str(REPO / "manifests" / "samples" / "tests")
GREEN_PASS = "\x1b[32mPASS\x1b[0m"


def run_on_terminal(argv: list[str], *, stream: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `colocate argv` with `stream` ("stdout" or "stderr") on a pseudo-terminal, the other piped;
    the exit code, what the terminal showed and what the pipe got."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm"} | (env or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "colocate", *argv],
        cwd=REPO,
        env=environment,
        stdout=follower if stream == "stdout" else subprocess.PIPE,
        stderr=follower if stream == "stderr" else subprocess.PIPE,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    piped = (process.stderr if stream == "stdout" else process.stdout).read()  # type: ignore[union-attr]
    code = process.wait(timeout=120)
    os.close(leader)
    return code, shown.decode().replace("\r\n", "\n"), piped.decode()


def test_results_are_coloured_on_a_terminal() -> None:
    code, shown, _ = run_on_terminal(["test", SUITE], stream="stdout")
    assert code == 0 and shown.count(GREEN_PASS) == 4


def test_no_color_turns_colour_off() -> None:
    code, shown, _ = run_on_terminal(["test", SUITE], stream="stdout", env={"NO_COLOR": "1"})
    assert code == 0 and "\x1b[" not in shown and shown.count("PASS") == 4


def test_a_pipe_gets_no_colour() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "colocate", "test", SUITE], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "\x1b[" not in result.stdout and result.stdout.count("PASS") == 4


def test_audit_draws_a_progress_bar_on_a_terminal_and_not_in_a_pipe(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    for name in ("profiles.yaml", "namespaces.yaml", "priorityclasses.yaml"):
        (state / name).write_text((REPO / "manifests" / "cluster" / name).read_text())
    (state / "pods.yaml").write_text((REPO / "manifests" / "samples" / "audit" / "running-pods.yaml").read_text())
    code, shown, piped = run_on_terminal(["audit", "--cluster", str(state)], stream="stderr")
    assert code == 1 and "auditing [" in shown and "\x1b[" not in piped  # the table went to a pipe
    result = subprocess.run(
        [sys.executable, "-m", "colocate", "audit", "--cluster", str(state)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and result.stderr == ""

"""Every command that loads manifests says what is wrong with a file in one line, `file:line:column:
message` for a syntax error, and a FIFO or deep JSON given to `apply -f`, `test` or `audit` is one
line on stderr and exit 2 (a FIFO used to hang the command, deep JSON to end in a traceback and
exit 1, which for `apply` means "denied"). Run as a user runs colocate: a process of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.colocate.test_errors import colocate, one_line_error
from tests.support.hostile_files import deep_json
from tests.support.paths import REPO

CLUSTER = REPO / "manifests" / "cluster"
POD = REPO / "manifests" / "samples" / "batch-pod.yaml"
BROKEN = "kind: Pod\nmetadata:\n  name: [unclosed\n"
POSITION = ":4:1: did not find expected ',' or ']' (while parsing a flow sequence at 3:9)"


def state_with(tmp_path: Path, name: str, text: str | None = None) -> tuple[Path, Path]:
    """A copy of the quick-start state with one more file (`text`, or a FIFO when None)."""
    state = tmp_path / "state"
    shutil.copytree(CLUSTER, state)
    path = state / name
    if text is None:
        os.mkfifo(path)
    else:
        path.write_text(text)
    return state, path


@pytest.mark.parametrize(
    "command",
    [
        ["apply", "-f", "{file}", "--cluster", str(CLUSTER)],
        ["audit", "--cluster", "{dir}"],
        ["scheduler", "simulate", "--cluster", "{dir}"],
        ["scheduler", "quota", "--cluster", "{dir}"],
        ["koordlet", "plan", "--node-dir", "{dir}"],
        [
            "descheduler",
            "run",
            "--dry-run",
            "--config",
            "manifests/descheduler/example-config.yaml",
            "--cluster",
            "{dir}",
        ],
        ["test", "{file}"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_yaml_error_is_one_line_with_the_files_position(tmp_path: Path, command: list[str]) -> None:
    state, path = state_with(tmp_path, "broken.yaml", BROKEN)
    result = colocate(*(arg.format(file=path, dir=state) for arg in command))
    assert one_line_error(result) == f"error: {path}{POSITION}"


def test_apply_warns_of_a_broken_cluster_file_in_one_line_and_goes_on(tmp_path: Path) -> None:
    state, path = state_with(tmp_path, "broken.yaml", BROKEN)
    result = colocate("apply", "--cluster", str(state), "-f", str(POD))
    assert result.returncode == 0 and result.stderr.splitlines() == [f"warning: {path}{POSITION}"]


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_apply_f_refuses_a_fifo_and_deep_json_in_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "pod.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        deep_json(path)
    line = one_line_error(colocate("apply", "--cluster", str(CLUSTER), "-f", str(path), timeout=20))
    expected = "not a regular file" if kind == "fifo" else "nested too deeply to parse"
    assert line == f"error: {path}: {expected}" + ("" if kind == "fifo" else " (more than 254 levels allowed)")


def test_apply_f_of_a_directory_refuses_a_fifo_in_it(tmp_path: Path) -> None:
    (tmp_path / "pods").mkdir()
    shutil.copy(POD, tmp_path / "pods")
    os.mkfifo(tmp_path / "pods" / "trap.yaml")
    line = one_line_error(colocate("apply", "--cluster", str(CLUSTER), "-f", str(tmp_path / "pods"), timeout=20))
    assert line == f"error: {tmp_path / 'pods' / 'trap.yaml'}: not a regular file, skipped"


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_audit_refuses_a_fifo_and_deep_json_in_its_cluster(tmp_path: Path, kind: str) -> None:
    state, path = state_with(tmp_path, "trap.json", None if kind == "fifo" else "")
    if kind == "deep":
        deep_json(path)
    line = one_line_error(colocate("audit", "--cluster", str(state), timeout=20))
    assert line.startswith(f"error: {path}: ")


def sample_suite(tmp_path: Path) -> Path:
    """A copy of the shipped sample suite (manifests/samples/tests) with the files it names."""
    for part in ("samples", "cluster"):
        shutil.copytree(REPO / "manifests" / part, tmp_path / "manifests" / part)
    return tmp_path / "manifests" / "samples" / "tests"


@pytest.mark.parametrize("which", ["suite", "resource"])
def test_test_refuses_a_fifo_suite_or_resource_in_one_line(tmp_path: Path, which: str) -> None:
    suites = sample_suite(tmp_path)
    target = suites / ("colocate-test.yaml" if which == "suite" else "resources.yaml")
    target.unlink()
    os.mkfifo(target)
    line = one_line_error(colocate("test", str(suites / "colocate-test.yaml"), timeout=20))
    assert f"{target}: not a regular file" in line


def test_test_refuses_deep_json_resources_in_one_line(tmp_path: Path) -> None:
    suites = sample_suite(tmp_path)
    suite = suites / "colocate-test.yaml"
    suite.write_text(suite.read_text().replace("  - resources.yaml", "  - deep.json"))
    deep_json(suites / "deep.json")
    line = one_line_error(colocate("test", str(suite), timeout=20))
    assert "deep.json: nested too deeply to parse" in line


def test_nothing_hangs_on_a_fifo_even_before_the_timeout(tmp_path: Path) -> None:
    """The timeout above would turn a hang into a failure; this says how long refusing takes."""
    path = tmp_path / "pod.yaml"
    os.mkfifo(path)
    try:
        colocate("apply", "--cluster", str(CLUSTER), "-f", str(path), timeout=20)
    except subprocess.TimeoutExpired:  # pragma: no cover - the bug this guards against
        pytest.fail("apply -f FIFO hung")

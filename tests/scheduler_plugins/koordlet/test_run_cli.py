"""`colocate koordlet run` as a process: a node directory, a fake cgroup tree, `--dry-run` — it
becomes ready, counts the writes it would do on /metrics, changes no file, and stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from colocate.main import main
from tests.support.cluster import free_port
from tests.support.paths import REPO
from tests.support.wait import wait_for_sync

EXAMPLE = REPO / "manifests" / "koordlet" / "example-node"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_dry_run_over_a_node_directory_writes_nothing_and_says_what_it_would(tmp_path: Path) -> None:
    quota = tmp_path / "cg" / "cpu" / "kubepods" / "besteffort" / "cpu.cfs_quota_us"
    quota.parent.mkdir(parents=True)
    quota.write_text("50000\n")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "colocate.main",
            "koordlet",
            "run",
            "--node-name",
            "n1",
            "--node-dir",
            str(EXAMPLE),
            "--cgroup-root",
            str(tmp_path / "cg"),
            "--dry-run",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_sync(
            lambda: get(f"{base}/readyz")[0] == 200, ignore=(OSError,), timeout=30, message="the agent to become ready"
        )
        text = wait_for_sync(
            lambda: get(f"{base}/metrics")[1],
            until=lambda t: 'koordlet_cgroup_writes_total{file="cpuset.cpus",strategy="CPUSuppress"}' in t,
            timeout=15,
            message="the dry-run writes to be counted",
        )
        assert "koordlet_be_suppress_cpu_cores" in text
        assert get(f"{base}/healthz")[0] == 200
        assert quota.read_text() == "50000\n"  # nothing written
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert "dry-run: write" in stderr


def test_a_bad_cgroup_root_or_gate_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["koordlet", "run", "--node-name", "n1", "--node-dir", str(EXAMPLE), "--cgroup-root", str(tmp_path)]) == 2
    )
    assert (
        main(
            [
                "koordlet",
                "run",
                "--node-name",
                "n1",
                "--node-dir",
                str(EXAMPLE),
                "--cgroup-root",
                str(tmp_path),
                "--qos-extension-plugins",
                "Nope=true",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "not a cgroup root" in err and "unrecognized feature gate: Nope" in err

"""Every user mistake and unreachable endpoint is one line on stderr and exit 2; a closed stdout ends
quietly. Run as a user runs colocate: in a process of its own, looking at what reaches the terminal."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from certs.generate import ensure_serving_certs
from tests.support.paths import REPO

CLUSTER = str(REPO / "manifests" / "cluster")
POD = str(REPO / "manifests" / "samples" / "batch-pod.yaml")


def colocate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "colocate", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error line; a server's JSON log lines before it are not part of the convention."""
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith('{"ts"')]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def unreachable_kubeconfig(directory: Path) -> Path:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = directory / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_certs_with_a_missing_kubeconfig(tmp_path: Path) -> None:
    assert "no such file" in one_line_error(colocate("certs", "inspect", "--kubeconfig", str(tmp_path / "none")))


def test_certs_with_an_unreachable_api_server(tmp_path: Path) -> None:
    error = one_line_error(colocate("certs", "inspect", "--kubeconfig", str(unreachable_kubeconfig(tmp_path))))
    assert "certs inspect: cannot reach the API server at 127.0.0.1:" in error


def test_certs_with_a_context_the_kubeconfig_lacks(tmp_path: Path) -> None:
    kubeconfig = str(unreachable_kubeconfig(tmp_path))
    assert "nope" in one_line_error(colocate("certs", "inspect", "--kubeconfig", kubeconfig, "--context", "nope"))


def test_a_time_that_is_not_one_says_so(tmp_path: Path) -> None:
    error = one_line_error(colocate("certs", "inspect", "--cert-dir", str(tmp_path), "--at", "nextyear"))
    assert "'nextyear' is not an ISO 8601 time" in error and "_when" not in error


def test_a_validity_rotation_would_renew_every_run_is_a_usage_error(tmp_path: Path) -> None:
    error = one_line_error(colocate("certs", "generate", "--cert-dir", str(tmp_path / "c"), "--validity", "1"))
    assert "--validity 1d: must exceed 182d" in error
    assert "is not a positive number of days" in one_line_error(
        colocate("certs", "generate", "--cert-dir", str(tmp_path / "c"), "--validity", "soon")
    )


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = colocate(
            "serve",
            "--cluster",
            CLUSTER,
            "--cert-dir",
            str(tmp_path / "certs"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--metrics-bind-address",
            "127.0.0.1:0",
        )
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in one_line_error(result)


def test_serve_with_its_health_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = colocate(
            "serve",
            "--cluster",
            CLUSTER,
            "--cert-dir",
            str(tmp_path / "certs"),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--health-probe-bind-address",
            f"127.0.0.1:{port}",
            "--metrics-bind-address",
            "0",
        )
    assert f"cannot listen on 127.0.0.1:{port} (--health-probe-bind-address): Address already in use" in (
        one_line_error(result)
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["apply", "--cluster", CLUSTER, "-f", POD],
        ["certs", "inspect", "--cert-dir", "{certs}", "-o", "json"],
        [
            "scheduler",
            "simulate",
            "--cluster",
            str(REPO / "manifests/scheduler/examples/reservation"),
            "--now",
            "2024-05-01T10:01:00Z",
            "-o",
            "json",
        ],
        ["koordlet", "plan", "--node-dir", str(REPO / "manifests/koordlet/example-node"), "-o", "table"],
        [
            "descheduler",
            "run",
            "--cluster",
            str(REPO / "manifests/descheduler/example-cluster"),
            "--config",
            str(REPO / "manifests/descheduler/example-config.yaml"),
            "--dry-run",
            "-o",
            "table",
        ],
    ],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(argv: list[str], tmp_path: Path) -> None:
    paths, _ = ensure_serving_certs(tmp_path / "certs")
    argv = [a.replace("{certs}", str(paths.directory)) for a in argv]
    process = subprocess.Popen(
        [sys.executable, "-m", "colocate", *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # like `| head` that has read enough, before colocate writes a byte
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141 and stderr == ""


@pytest.mark.parametrize("command", ["generate", "rotate"])
def test_certificates_are_not_written_into_a_python_package(command: str, tmp_path: Path) -> None:
    package = tmp_path / "certs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    error = one_line_error(colocate("certs", command, "--cert-dir", str(package)))
    assert "is a Python package" in error and sorted(p.name for p in package.iterdir()) == ["__init__.py"]

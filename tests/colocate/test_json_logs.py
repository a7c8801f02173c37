"""Every long-running command writes JSON lines on stderr, one object per line, from start to stop."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cluster import free_port

REPO = Path(__file__).resolve().parents[2]


def read_until(process: subprocess.Popen[bytes], text: str, timeout: float = 30) -> list[str]:
    """stderr lines up to the first that contains `text` (the process has said it is up), and any
    others that came in the same read."""
    assert process.stderr is not None
    received = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        while text.encode() not in received or not received.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            assert remaining > 0 and selector.select(remaining), f"no {text!r} within {timeout}s: {received!r}"
            chunk = os.read(process.stderr.fileno(), 65536)
            assert chunk, f"exited ({process.wait()}) before {text!r}: {received!r}"
            received += chunk
    return received.decode().splitlines()


@pytest.mark.parametrize(
    "command, up, logger",
    [
        (
            [
                "serve",
                "--cluster",
                str(REPO / "manifests" / "cluster"),
                "--cert-dir",
                "{tmp}/certs",
                "--host",
                "127.0.0.1",
                "--drain-delay",
                "0",
                "--shutdown-timeout",
                "1",
                "--health-probe-bind-address",
                "127.0.0.1:0",
                "--metrics-bind-address",
                "127.0.0.1:0",
            ],
            "serving admission webhooks",
            "colocate.serve",
        ),
        (
            [
                "scheduler",
                "extender",
                "--cluster",
                str(REPO / "manifests" / "scheduler" / "example-cluster"),
                "--host",
                "127.0.0.1",
            ],
            "serving filter, prioritize, preempt, bind",
            "colocate.extender",
        ),
    ],
    ids=["serve", "scheduler extender"],
)
def test_a_server_logs_json_lines(tmp_path: Path, command: list[str], up: str, logger: str) -> None:
    argv = [
        sys.executable,
        "-m",
        "colocate",
        *(part.replace("{tmp}", str(tmp_path)) for part in command),
        "--port",
        str(free_port()),
    ]
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lines = read_until(process, up)
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    records = [json.loads(line) for line in [*lines, *rest.decode().splitlines()]]
    assert all({"ts", "level", "logger"} <= record.keys() for record in records)
    assert any(record["logger"] == logger and record["level"] == "info" for record in records)


def test_serve_says_where_it_listens_in_words_not_a_python_list(tmp_path: Path) -> None:
    health, metrics = free_port(), free_port()
    argv = [
        *(sys.executable, "-m", "colocate", "serve", "--cluster", str(REPO / "manifests" / "cluster")),
        *("--cert-dir", str(tmp_path / "certs"), "--host", "127.0.0.1", "--port", str(free_port())),
        *("--health-probe-bind-address", f"127.0.0.1:{health}", "--metrics-bind-address", f"127.0.0.1:{metrics}"),
    ]
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lines = read_until(process, "serving admission webhooks")
    finally:
        process.kill()
        process.communicate()
    (message,) = [json.loads(line)["msg"] for line in lines if "serving admission webhooks" in line]
    assert "[" not in message and "'" not in message, message
    assert f"http://127.0.0.1:{health} (/healthz, /readyz)" in message
    assert f"http://127.0.0.1:{metrics} (/metrics)" in message

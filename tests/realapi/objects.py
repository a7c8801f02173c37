"""What the end-to-end tests through the real API server share: the objects they create, and the
`colocate` command line run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import REPO
from tests.support.realapi import RealApi
from tests.support.served import Served

#: quota sizes: a small child, a parent's min, a max
SMALL, MEDIUM, LARGE = {"cpu": "1", "memory": "1Gi"}, {"cpu": "10", "memory": "10Gi"}, {"cpu": "20", "memory": "20Gi"}


def colocate(*argv: str) -> subprocess.CompletedProcess[str]:
    """The `colocate` command line, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "colocate.main", *argv], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def pod(name: str, labels: dict[str, str] | None = None, **resources: dict[str, str]) -> dict[str, Any]:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [container]},
    }


def tier_ls() -> dict[str, str]:
    """The label the example latency-sensitive profile selects."""
    return {"colocate.example.com/tier": "latency-sensitive"}


def serve_from_api(realapi: RealApi, base: Path) -> Served:
    """`colocate serve --kubeconfig` in a process of its own, ready, serving the certificates that
    `colocate certs generate` wrote to `base/certs` (killed if it never gets ready)."""
    generated = colocate("certs", "generate", "--cert-dir", str(base / "certs"))
    assert generated.returncode == 0, generated.stderr
    served = Served(base, "--kubeconfig", str(realapi.kubeconfig), "--drain-delay", "0")
    try:
        return served.wait_ready(120)
    except BaseException:
        served.kill()
        raise

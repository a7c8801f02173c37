"""`colocate serve --cluster DIR` as a real child process on 127.0.0.1, and clients that talk to it
the way a careless or hostile workload could: whole requests, raw bytes over TLS, idle sockets.

    server = Served(tmp_path, "--max-connections", "10")
    server.wait_ready()
    status, body = server.request("/mutate-pod", admission_review(pod))
    server.probe("/readyz")                                   # the health listener (plain HTTP)
    server.metric("colocate_webhook_connections")            # an unlabelled series, from /metrics
    server.metric("controller_runtime_webhook_requests_total", code="400", webhook="/mutate-pod")
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import pytest

from certs.generate import ensure_serving_certs
from tests.support.cluster import free_port
from tests.support.paths import REPO
from tests.support.wait import wait_for_sync

UNPRIVILEGED = 65534  # nobody


#: As root, the server runs without the two capabilities that let root ignore file permissions:
#: a `chmod 000` directory is then unreadable to it, as to any non-root user, and the code under
#: test stays readable wherever the checkout lives (a 0700 CI directory is no obstacle).
WITHOUT_DAC = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")


def unprivileged_user() -> int | None:
    """The uid to run a server as so that file permissions apply to it: nobody when the tests run
    as root (root reads a `chmod 000` directory), else None (the tests' own user already is)."""
    return UNPRIVILEGED if os.geteuid() == 0 else None


def _python_for(user: int | None) -> tuple[str, dict[str, str] | None]:
    """An interpreter `user` can run, with this one's packages: ours when every directory on its path
    lets others through, else the system's of the same version (pyenv lives under a 0700 /root)."""
    if user is None:
        return sys.executable, None
    code = [REPO, *map(Path, site.getsitepackages())]
    if not all(_traversable(path) for path in code):
        pytest.skip(f"uid {user} cannot read the code under test ({', '.join(map(str, code))})")
    if _traversable(Path(sys.executable).resolve().parent):
        return sys.executable, None
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.exists():
        pytest.skip(f"no interpreter that uid {user} can run")
    paths = [str(REPO), *site.getsitepackages()]
    return str(system), {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HOME": "/nonexistent"}


def _traversable(path: Path) -> bool:
    """Whether any user may reach `path` (every directory on the way lets others through)."""
    return all(os.stat(directory).st_mode & stat.S_IXOTH for directory in (path, *path.parents))


class Served:
    """One `colocate serve` process; `user` runs it as that uid and gid (see `unprivileged_user`).

    For another user the state and certificates live in a fresh directory everyone may traverse
    (pytest's tmp_path is under a 0700 directory); `state` is then copied there."""

    def __init__(
        self,
        tmp_path: Path,
        *extra: str,
        state: Path | None = None,
        user: int | None = None,
        stderr: IO[str] | int | None = None,
    ) -> None:
        confine: tuple[str, ...] = ()
        if user is not None and os.geteuid() == 0 and shutil.which(WITHOUT_DAC[0]):
            confine, user = WITHOUT_DAC, None  # root, bound by file permissions like any user
        base = tmp_path
        if user is not None:
            base = Path(tempfile.mkdtemp(prefix="colocate-served-"))
            base.chmod(0o755)
            self.cleanup: Path | None = base
        else:
            self.cleanup = None
        self.state = base / "state"
        shutil.copytree(state or REPO / "manifests" / "cluster", self.state)
        self.certs = base / "certs"
        self.port = free_port()
        self.health_port, self.metrics_port = free_port(), free_port()  # webhook.probes' listeners
        self.log = tmp_path / f"serve-{self.port}.log"
        if user is not None:  # generated here, then readable by the server's user
            ensure_serving_certs(self.certs, ("webhook.example",))
            for path in (self.certs, *self.certs.iterdir()):
                os.chown(path, user, user)
        python, env = _python_for(user)
        self.process = subprocess.Popen(
            [
                *confine,
                python,
                "-m",
                "colocate.main",
                "serve",
                *(() if "--kubeconfig" in extra else ("--cluster", str(self.state))),  # else from the API server
                "--cert-dir",
                str(self.certs),
                "--port",
                str(self.port),
                "--host",
                "127.0.0.1",
                "--reload-interval",
                "0.2",
                "--dns-name",
                "webhook.example",
                "--health-probe-bind-address",
                f"127.0.0.1:{self.health_port}",
                "--metrics-bind-address",
                f"127.0.0.1:{self.metrics_port}",
                "--metrics-cache",  # the tests read a counter right after what moves it
                "0",
                *extra,
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=stderr if stderr is not None else self.log.open("w"),
            text=True,
            user=user,
            group=user,
            extra_groups=[] if user is not None else None,
            env=env,
        )
        self.tls: ssl.SSLContext | None = None

    # -- clients ---------------------------------------------------------------------------------
    def request(
        self,
        path: str,
        body: object = None,
        timeout: float = 5,
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
    ) -> tuple[int, bytes]:
        if data is None and body is not None:
            data = json.dumps(body).encode()
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.port}{path}",
            data=data,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def probe(self, path: str, timeout: float = 5) -> tuple[int, bytes]:
        """GET `path` (/healthz, /readyz) on the health listener, or /metrics on the metrics one:
        plain HTTP, as kubelet and Prometheus read them."""
        port = self.metrics_port if path.startswith("/metrics") else self.health_port
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def review(self, path: str, body: object, **kwargs: Any) -> dict[str, Any]:
        """The AdmissionReview `response` of a POST that must be answered with 200."""
        status, raw = self.request(path, body, **kwargs)
        assert status == 200, (status, raw[:300])
        response: dict[str, Any] = json.loads(raw)["response"]
        return response

    def connect(self, timeout: float = 5) -> ssl.SSLSocket:
        """A TLS connection that has finished its handshake and sent nothing."""
        assert self.tls is not None
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return self.tls.wrap_socket(raw, server_hostname="localhost")

    def metric(self, name: str, default: float | None = None, **labels: str) -> float:
        """The value of the series `name` whose labels include `labels` (summed over the rest)."""
        status, body = self.probe("/metrics")
        assert status == 200
        total, found = 0.0, False
        for line in body.decode().splitlines():
            if line.startswith("#") or not (line.startswith(name + "{") or line.startswith(name + " ")):
                continue
            series, value = line.rsplit(" ", 1)
            if all(f'{key}="{wanted}"' in series for key, wanted in labels.items()):
                total, found = total + float(value), True
        if not found:
            assert default is not None, f"no series {name} {labels} on /metrics"
            return default
        return total

    def rss_kib(self) -> int:
        """Resident memory of the server process (a single worker)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    # -- life cycle ------------------------------------------------------------------------------
    def wait_ready(self, deadline: float = 20) -> Served:
        def ready() -> bool:
            assert self.process.poll() is None, self.log_text()
            if self.tls is None and (self.certs / "ca.crt").exists():
                try:
                    self.tls = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
                except ssl.SSLError:
                    pass  # still being written
            return self.tls is not None and self.probe("/readyz", timeout=1)[0] == 200

        wait_for_sync(ready, timeout=deadline, interval=0.1, ignore=(OSError,), message="the server to become ready")
        return self

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                lines.append({"notJson": line})
        return lines

    def stop(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.cleanup is not None:
            for directory, _, _ in os.walk(self.cleanup):
                os.chmod(directory, 0o755)  # a test may have left one unreadable
            shutil.rmtree(self.cleanup, ignore_errors=True)

"""`colocate serve` as an operator runs it: a real process, generated certificates, live reload."""
from __future__ import annotations

import base64
import json
import shutil
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from tests.support.admission import admission_review
from tests.support.cluster import free_port
from tests.support.paths import REPO
from tests.support.wait import wait_for_sync

POD = yaml.safe_load((REPO / "manifests" / "samples" / "batch-pod.yaml").read_text())


class Served:
    def __init__(self, tmp_path: Path, *extra: str) -> None:
        self.state = tmp_path / "state"
        shutil.copytree(REPO / "manifests" / "cluster", self.state)
        self.certs = tmp_path / "certs"
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "colocate.cli", "serve", "--cluster", str(self.state), "--cert-dir", str(self.certs),
             "--port", str(self.port), "--host", "127.0.0.1", "--reload-interval", "0.2",
             "--dns-name", "webhook.example", *extra],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.tls: ssl.SSLContext | None = None

    def request(self, path: str, body: object = None, timeout: float = 5) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}", data=data,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def wait_ready(self, deadline: float = 20) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, self.process.stderr.read()
            if self.tls is None and (self.certs / "ca.crt").exists():
                try:
                    self.tls = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
                except ssl.SSLError:
                    pass  # still being written
            return self.tls is not None and self.request("/readyz", timeout=1)[0] == 200

        wait_for_sync(ready, timeout=deadline, interval=0.1, ignore=(OSError,), message="the server to become ready")

    def mutate(self) -> dict:
        status, body = self.request("/mutate-pod", admission_review(POD))
        assert status == 200
        response = json.loads(body)["response"]
        assert response["allowed"]
        return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []

    def metric(self, name: str) -> float:
        """The value of an unlabelled metric on /metrics."""
        status, body = self.request("/metrics")
        assert status == 200
        return next(float(line.split()[-1]) for line in body.decode().splitlines() if line.split(" ")[0] == name)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


@pytest.fixture
def served(tmp_path):
    servers = []

    def start(*extra: str) -> Served:
        servers.append(Served(tmp_path, *extra))
        servers[-1].wait_ready()
        return servers[-1]

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def test_serve_generates_trusted_certificates_and_mutates(served):
    server = served()
    cert = x509.load_pem_x509_certificate((server.certs / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "webhook.example"} <= set(names.get_values_for_type(x509.DNSName))
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert oct((server.certs / "tls.key").stat().st_mode & 0o777) == "0o600"
    paths = {op["path"] for op in server.mutate()}
    assert "/metadata/labels/koordinator.sh~1qosClass" in paths
    assert server.stop() == 0


def test_tls_1_2_is_the_minimum_and_is_accepted(served):
    from certs.material import CertPaths
    from webhook.serve import tls_context

    server = served()
    assert tls_context(CertPaths(server.certs)).minimum_version == ssl.TLSVersion.TLSv1_2
    tls12 = ssl.create_default_context(cafile=str(server.certs / "ca.crt"))
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    server.tls = tls12
    assert server.request("/healthz")[0] == 200


def test_profile_changes_take_effect_without_restart_and_broken_files_keep_the_last_state(served):
    server = served()
    assert server.mutate() != []
    profiles = server.state / "profiles.yaml"
    original = profiles.read_text()
    problems = server.metric("colocate_cluster_state_problems")
    profiles.write_text("kind: [this is not yaml")
    wait_for_sync(lambda: server.metric("colocate_cluster_state_problems") > problems, timeout=10, interval=0.1,
                  message="the server to read the broken file")
    assert server.mutate() != [], "a broken file must keep its last good profiles"
    profiles.unlink()
    wait_for_sync(server.mutate, until=lambda patch: patch == [], timeout=10, interval=0.1,
                  message="the deleted profiles to stop applying")
    assert server.mutate() == []
    profiles.write_text(original)
    wait_for_sync(server.mutate, until=lambda patch: patch != [], timeout=10, interval=0.1,
                  message="the restored profiles to apply")
    assert server.mutate() != []
    assert "cannot load" in (server.stop(), server.process.stderr.read())[1]


def test_workers_share_the_port_and_metrics(served):
    server = served("--workers", "2")
    for _ in range(20):
        server.mutate()
    status, text = server.request("/metrics")
    assert status == 200
    line = next(candidate for candidate in text.decode().splitlines()
                if candidate.startswith('controller_runtime_webhook_requests_total{code="200",webhook="/mutate-pod"}'))
    assert float(line.split()[-1]) == 20.0, "every worker's requests are counted in each scrape"
    assert server.stop() == 0


def _running_children(parent: int, marker: bytes) -> list[int]:
    """Live (not zombie) processes whose parent is `parent` and whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(ppid) == parent and state != "Z" and marker in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_stop_when_the_parent_is_killed(served):
    server = served("--workers", "2", "--drain-delay", "0")
    workers = _running_children(server.process.pid, b"spawn_main")
    assert len(workers) == 2
    server.process.kill()
    server.process.wait()
    wait_for_sync(lambda: not any(_alive(pid) for pid in workers), timeout=15, interval=0.1,
                  message="the orphaned workers to stop")
    assert [pid for pid in workers if _alive(pid)] == [], "orphaned workers must not keep serving"

"""`colocate serve` as an operator runs it: a real process, generated certificates, live reload."""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path

import yaml
from cryptography import x509

from tests.support.admission import admission_review
from tests.support.paths import REPO
from tests.support.served import Served
from tests.support.wait import wait_for_sync

POD = yaml.safe_load((REPO / "manifests" / "samples" / "batch-pod.yaml").read_text())


def mutate(server: Served) -> list:
    response = server.review("/mutate-pod", admission_review(POD))
    assert response["allowed"]
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def test_serve_generates_trusted_certificates_and_mutates(served):
    server = served()
    cert = x509.load_pem_x509_certificate((server.certs / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "webhook.example"} <= set(names.get_values_for_type(x509.DNSName))
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert oct((server.certs / "tls.key").stat().st_mode & 0o777) == "0o600"
    paths = {op["path"] for op in mutate(server)}
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
    assert server.probe("/healthz")[0] == 200


def test_profile_changes_take_effect_without_restart_and_broken_files_keep_the_last_state(served):
    server = served()
    assert mutate(server) != []
    profiles = server.state / "profiles.yaml"
    original = profiles.read_text()
    problems = server.metric("colocate_cluster_state_problems")
    profiles.write_text("kind: [this is not yaml")
    wait_for_sync(
        lambda: server.metric("colocate_cluster_state_problems") > problems,
        timeout=10,
        interval=0.1,
        message="the server to read the broken file",
    )
    assert mutate(server) != [], "a broken file must keep its last good profiles"
    profiles.unlink()
    wait_for_sync(
        lambda: mutate(server),
        until=lambda patch: patch == [],
        timeout=10,
        interval=0.1,
        message="the deleted profiles to stop applying",
    )
    assert mutate(server) == []
    profiles.write_text(original)
    wait_for_sync(
        lambda: mutate(server),
        until=lambda patch: patch != [],
        timeout=10,
        interval=0.1,
        message="the restored profiles to apply",
    )
    assert mutate(server) != []
    server.stop()
    broken = [line for line in server.log_text().splitlines() if f"{profiles}:2:1:" in line]  # file:line:column
    assert len(broken) == 1 and '"level":"warning"' in broken[0]  # logged once, not once per scan


def test_workers_share_the_port_and_metrics(served):
    server = served("--workers", "2")
    for _ in range(20):
        mutate(server)

    def counted() -> float:
        return server.metric("controller_runtime_webhook_requests_total", code="200", webhook="/mutate-pod")

    # each worker hands its tallies over every second (webhook.metrics.FLUSH_INTERVAL)
    wait_for_sync(
        counted, until=lambda total: total >= 20, timeout=5, message="every worker's requests counted in a scrape"
    )
    assert counted() == 20.0
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
    wait_for_sync(
        lambda: not any(_alive(pid) for pid in workers),
        timeout=15,
        interval=0.1,
        message="the orphaned workers to stop",
    )
    assert [pid for pid in workers if _alive(pid)] == [], "orphaned workers must not keep serving"


def test_what_exists_at_start_up_is_left_out_of_later_collections():
    import gc

    from webhook.serve import freeze_startup_heap

    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > 10_000  # the modules and classes, not a handful of objects
    finally:
        gc.unfreeze()


def test_sigterm_does_not_wait_out_the_shutdown_timeout_for_an_idle_kept_alive_connection(served):
    """kube-apiserver keeps its connections to the webhook alive between calls: one idle at SIGTERM
    is closed at once, not waited on until --shutdown-timeout (seen against kube-apiserver 1.20)."""
    server = served("--drain-delay", "0", "--shutdown-timeout", "60")
    kept_alive = server.connect()
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n")
    assert kept_alive.recv(4096).startswith(b"HTTP/1.1 ")  # answered, and the connection stays open

    assert server.stop(timeout=15) == 0  # raises TimeoutExpired when it waits for the idle connection
    kept_alive.close()

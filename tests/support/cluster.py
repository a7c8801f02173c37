"""A pretend cluster for end-to-end tests: the API-server stand-in, colocate server processes, and
a Service whose endpoints follow the servers' readiness (the kubelet probe plus kube-proxy).

`ColocateProcess` runs `colocate serve --kubeconfig` as a real child process, so tests can send it
SIGTERM. `Service` probes `/readyz` of every replica every `period` seconds and hands the
dispatcher only the ready ones, as the endpoints controller does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from certs.generate import ensure_serving_certs
from certs.material import CertPaths
from colocate.cluster.files import read_manifest_file
from tests.support.apiserver import ApiServer
from tests.support.dispatcher import Admission
from tests.support.paths import REPO
from tests.support.wait import wait_for
from tests.support.webhook_manifests import MANIFESTS, NAMESPACE, SERVICE

SERVICE_DNS = f"{SERVICE}.{NAMESPACE}.svc"
#: the quick-start's workload: pods in its namespace labelled `app: batch`, one cpu and 1Gi each
DEMO_NAMESPACE = "colocation-demo"
DEMO_REQUESTS = {"cpu": "1", "memory": "1Gi"}
BATCH_LABELS = {"app": "batch"}
BATCH_SELECTOR = {"matchLabels": BATCH_LABELS}
FAST_ARGS = ("--watch-timeout", "5", "--backoff-max", "0.5", "--drain-delay", "1", "--shutdown-timeout", "5")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed(api: ApiServer, files: Sequence[Path]) -> None:
    """Apply manifest files to the stand-in, as `kubectl apply -f` would."""
    for path in files:
        for obj in read_manifest_file(path):
            api.apply(obj)


def inject_ca_bundle(api: ApiServer, ca: Path) -> None:
    """Set caBundle on every webhook of both configurations (the certificate controller's job)."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        resource = api.by_kind[kind]
        for config in api.store.list(resource):
            patch = [
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}
                for i in range(len(config.get("webhooks") or ()))
            ]
            api.store.patch(resource, "", config["metadata"]["name"], patch, "json")


def webhook_configurations(api: ApiServer) -> list[dict[str, Any]]:
    return [
        c
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for c in api.store.list(api.by_kind[kind])
    ]


def namespace_labels(api: ApiServer, name: str) -> dict[str, str] | None:
    try:
        namespace = api.store.get(api.by_kind["Namespace"], "", name)
    except Exception:
        return None
    return namespace["metadata"].get("labels") or {}


def qos_of(result: Admission) -> str | None:
    """The Koordinator QoS label of the pod as admitted (after the mutating webhooks)."""
    return ((result.object or {}).get("metadata") or {}).get("labels", {}).get("koordinator.sh/qosClass")


def make_certs(directory: Path) -> CertPaths:
    paths, _ = ensure_serving_certs(directory, (SERVICE_DNS,))
    return paths


class ColocateProcess:
    def __init__(self, kubeconfig: Path, cert_dir: Path, log: Path, extra: Sequence[str] = FAST_ARGS) -> None:
        self.port = free_port()
        self.health_port = free_port()  # /readyz and /metrics, on their own listener (webhook.probes)
        self.log = log
        command = [
            sys.executable,
            "-m",
            "colocate.main",
            "serve",
            "--kubeconfig",
            str(kubeconfig),
            "--cert-dir",
            str(cert_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address",
            f"127.0.0.1:{self.health_port}",  # one listener for both
            *extra,
        ]
        self.process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=REPO)

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    async def wait(self, timeout: float) -> int:
        """The exit code, once the process has exited."""
        code = await wait_for(
            self.process.poll,
            until=lambda code: code is not None,
            timeout=timeout,
            message=f"colocate (pid {self.process.pid}) to exit",
        )
        assert code is not None
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


class Service:
    """Ready endpoints of a set of replicas, refreshed by probing `/readyz` like a kubelet."""

    def __init__(self, replicas: Sequence[ColocateProcess], period: float = 0.1) -> None:
        self.replicas, self.period = list(replicas), period
        self.ready: set[int] = set()
        # Like kubelet's HTTPS probes: no certificate verification (a rotation must not fail probes).
        self._context = ssl.create_default_context()
        self._context.check_hostname = False
        self._context.verify_mode = ssl.CERT_NONE
        self._task: asyncio.Task[None] | None = None

    def endpoints(self, namespace: str, name: str) -> list[tuple[str, int]]:
        return [("127.0.0.1", r.port) for r in self.replicas if r.port in self.ready]

    async def _probe(self, session: aiohttp.ClientSession, replica: ColocateProcess) -> None:
        try:
            async with session.get(
                f"http://127.0.0.1:{replica.health_port}/readyz", timeout=aiohttp.ClientTimeout(total=1)
            ) as response:
                ok = response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError):
            ok = False
        (self.ready.add if ok else self.ready.discard)(replica.port)

    async def _run(self) -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                await asyncio.gather(*(self._probe(session, r) for r in self.replicas))
                await asyncio.sleep(self.period)  # the probe period is the behaviour: kubelet probes on a timer

    async def start(self, timeout: float = 20.0) -> Service:
        self._task = asyncio.create_task(self._run())
        await wait_for(
            lambda: len(self.ready) == len(self.replicas),
            timeout=timeout,
            message=lambda: "every replica ready:\n" + "\n".join(r.log.read_text()[-2000:] for r in self.replicas),
        )
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def cluster_files() -> list[Path]:
    """The stand-in's starting state: the webhook configurations and the quick-start objects."""
    return [
        MANIFESTS / "deploy" / "webhooks.yaml",
        MANIFESTS / "cluster" / "namespaces.yaml",
        MANIFESTS / "cluster" / "priorityclasses.yaml",
        MANIFESTS / "deploy" / "namespace.yaml",
    ]

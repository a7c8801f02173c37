"""Rotating under load fails no admission: the Done-means test of the certificate lifecycle.

colocate runs as a real `serve` process with two workers, reading the API stand-in. A load
generator drives `/mutate-pod` (and the validating webhook after it) through the dispatcher, which
verifies every connection against the caBundle of the webhook configurations, exactly as
kube-apiserver does: one half over kept-alive connections, the other with a new connection (and
handshake) per request. Meanwhile `rotate` replaces the CA and then the serving certificate.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import urllib.request
from pathlib import Path

from certs.generate import service_names, utcnow
from certs.kube import Cluster
from certs.material import pem_certs
from certs.plan import Policy
from certs.rotate import Rotation, Targets, rotate
from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod
from tests.support.cluster import (
    BATCH_LABELS,
    DEMO_NAMESPACE,
    DEMO_REQUESTS,
    FAST_ARGS,
    ColocateProcess,
    Service,
    cluster_files,
    namespace_labels,
    seed,
    webhook_configurations,
)
from tests.support.dispatcher import Dispatcher
from tests.support.tls import served_certificate
from tests.support.wait import wait_for

POLICY = Policy(names=service_names("koordinator-webhook-service", "koordinator-system"))
SERVE_ARGS = (*FAST_ARGS, "--workers", "2", "--cert-reload-interval", "0.1", "--log-level", "warning")


class Load:
    def __init__(self, dispatchers: list[Dispatcher]) -> None:
        self.dispatchers, self.ok, self.failures = dispatchers, 0, []
        self.stop = asyncio.Event()

    async def drive(self, dispatcher: Dispatcher, worker: int) -> None:
        index = 0
        while not self.stop.is_set():
            index += 1
            pod = make_pod(f"load-{worker}-{index}", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)
            result = await dispatcher.admit(pod)
            if result.allowed:
                self.ok += 1
            else:
                self.failures.append(result.message)

    def start(self, per_dispatcher: int = 3) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(self.drive(d, i * 10 + j))
            for i, d in enumerate(self.dispatchers)
            for j in range(per_dispatcher)
        ]


async def all_workers_serve(port: int, rotation: Rotation, timeout: float = 10.0) -> float:
    """Seconds until 20 new handshakes in a row, trusting only the new CA, get the new certificate."""
    started = time.monotonic()
    ca = pem_certs([rotation.plan.material.ca])
    streak = 0

    async def handshakes_in_a_row() -> int:
        nonlocal streak
        try:
            served = await asyncio.to_thread(served_certificate, port, ca)
            streak = streak + 1 if served == rotation.plan.material.cert else 0
        except ssl.SSLError:
            streak = 0
        return streak

    await wait_for(
        handshakes_in_a_row,
        until=lambda n: n >= 20,
        timeout=timeout,
        interval=0.01,
        message="every worker to reload (20 handshakes in a row with the new certificate)",
    )
    return time.monotonic() - started


def metric(port: int, name: str) -> float:
    """A series of /metrics on the metrics listener `port` (plain HTTP, webhook/probes.py)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(value) for value in re.findall(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M))


async def test_rotating_the_ca_and_the_serving_certificate_under_load_fails_no_admission(
    api: ApiServer, cluster: Cluster, kubeconfig: Path, tmp_path: Path
) -> None:
    seed(api, cluster_files())
    cert_dir = tmp_path / "certs"
    targets = Targets(cert_dir, cluster)
    await asyncio.to_thread(rotate, targets, POLICY, utcnow())
    process = ColocateProcess(kubeconfig, cert_dir, tmp_path / "serve.log", SERVE_ARGS)
    service = await Service([process]).start()
    configurations = lambda: webhook_configurations(api)  # noqa: E731
    labels = lambda name: namespace_labels(api, name)  # noqa: E731
    dispatchers = [
        Dispatcher(configurations, service.endpoints, labels),
        Dispatcher(configurations, service.endpoints, labels, keep_alive=False),
    ]
    load = Load(dispatchers)
    tasks = load.start()
    try:
        await wait_for(lambda: load.ok > 20, timeout=10, message="the load to flow before the rotation")
        before_rotation = load.ok
        new_ca = await asyncio.to_thread(rotate, targets, POLICY, utcnow(), force_ca=True, settle=0.3)
        assert new_ca.plan.new_ca and len(new_ca.patched) == 2 and len(new_ca.plan.material.ca_certs) == 2
        reload_seconds = await all_workers_serve(process.port, new_ca)
        new_cert = await asyncio.to_thread(rotate, targets, POLICY, utcnow(), force=True)
        assert new_cert.plan.new_cert and not new_cert.plan.new_ca and new_cert.patched == ()
        await all_workers_serve(process.port, new_cert)
        after_rotation = load.ok
        await wait_for(
            lambda: load.ok > after_rotation + 20, timeout=10, message="admissions to go on after the rotation"
        )
    finally:
        load.stop.set()
        await asyncio.wait(tasks, timeout=10)
        for dispatcher in dispatchers:
            await dispatcher.close()
        await service.stop()
    try:
        assert load.failures == []
        assert before_rotation > 20 and load.ok > before_rotation + 20, (before_rotation, load.ok)
        assert reload_seconds < 5
        assert metric(process.health_port, 'colocate_certificate_reloads_total{result="ok"}') >= 4  # 2 workers x 2
        assert metric(process.health_port, 'colocate_certificate_reloads_total{result="error"}') == 0
        expiry = metric(process.health_port, 'colocate_certificate_expiry_timestamp_seconds{certificate="serving"}')
        assert expiry == new_cert.plan.material.cert.not_valid_after_utc.timestamp()
        print(
            f"admissions: {before_rotation} before rotating, {load.ok} in all, 0 failed; "
            f"all workers on the new CA {reload_seconds:.2f}s after its rotation"
        )
    finally:
        process.kill()

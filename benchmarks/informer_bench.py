"""Informer path benchmark (not a test): 10,000 namespaces and 1,000 profiles in the stand-in.

Measures, for live mode: time from start to ready (every kind listed, first snapshot published),
the cache's memory (tracemalloc of the in-process informer), the cost of one watch event burst,
and admission throughput through `colocate serve --kubeconfig` compared with
`colocate serve --cluster` (the embedded default) on the same objects.

    .venv/bin/python -m benchmarks.informer_bench [--namespaces N] [--profiles P] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from colocate.cluster.client import api_client
from tests.support.apiserver import ApiServer
from tests.support.cluster import ColocateProcess, make_certs
from webhook.registry import default_routes
from webhook.snapshots import ApiServerSnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.watched import watched_kinds


def objects(namespaces: int, profiles: int) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "koord-batch"},
            "value": 5000,
        }
    ]
    result += [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": f"ns-{i}", "labels": {"team": f"t{i % 50}", "colocate": str(i % 2 == 0).lower()}},
        }
        for i in range(namespaces)
    ]
    result += [
        {
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": {"name": f"profile-{i:04d}"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"team": f"t{i % 50}"}},
                "selector": {"matchLabels": {"app": f"app-{i}"}},
                "qosClass": "BE",
                "priorityClassName": "koord-batch",
                "labels": {"profile": str(i)},
            },
        }
        for i in range(profiles)
    ]
    return result


def review(index: int) -> bytes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{index}", "namespace": f"ns-{index % 1000}", "labels": {"app": f"app-{index % 1000}"}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
    }
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"u{index}",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": f"ns-{index % 1000}",
                "operation": "CREATE",
                "userInfo": {},
                "object": pod,
            },
        }
    ).encode()


async def throughput(port: int, ca: Path, seconds: float, concurrency: int = 16) -> float:
    context = ssl.create_default_context(cafile=str(ca))
    url = f"https://127.0.0.1:{port}/mutate-pod"
    done = 0
    deadline = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=concurrency)) as session:

        async def worker(offset: int) -> None:
            nonlocal done
            index = offset
            while time.perf_counter() < deadline:
                async with session.post(url, data=review(index), headers={"Content-Type": "application/json"}) as r:
                    assert r.status == 200
                    await r.read()
                done += 1
                index += concurrency

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return done / seconds


async def wait_ready(health_port: int, timeout: float = 120) -> float:
    """Until /readyz on the health listener (`webhook/probes.py`) says ready."""
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() - started < timeout:
            try:
                async with session.get(f"http://127.0.0.1:{health_port}/readyz") as r:
                    if r.status == 200:
                        return time.perf_counter() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError("not ready")


async def main(namespaces: int, profiles: int, seconds: float) -> None:
    work = Path(tempfile.mkdtemp(prefix="informer-bench-"))
    async with ApiServer(bookmark_interval=5) as api:
        for obj in objects(namespaces, profiles):
            api.apply(obj)
        kubeconfig = api.write_kubeconfig(work / "kubeconfig")

        # In process: time to ready, cache memory, cost of an event burst.
        tracemalloc.start()
        source = ApiServerSnapshots(api_client(kubeconfig), watched_kinds(default_routes()), KubeSettings())
        state = StateHolder()
        started = time.perf_counter()
        task = asyncio.create_task(source.run(state))
        while not state.ready:
            await asyncio.sleep(0.01)
        ready_in = time.perf_counter() - started
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        burst_started = time.perf_counter()
        for i in range(100):
            api.apply(
                {
                    "apiVersion": "config.koordinator.sh/v1alpha1",
                    "kind": "ClusterColocationProfile",
                    "metadata": {"name": f"profile-{i:04d}"},
                    "spec": {"qosClass": "LS"},
                }
            )
        while sum(p.qos_class == "LS" for p in state.snapshot.profiles) < 100:
            await asyncio.sleep(0.005)
        burst = time.perf_counter() - burst_started
        publishes = state.generation
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

        # Out of process: live vs embedded admission throughput on the same objects.
        certs = make_certs(work / "certs")
        state_dir = work / "state"
        state_dir.mkdir()
        (state_dir / "objects.yaml").write_text(yaml.safe_dump_all(objects(namespaces, profiles)))
        results = {}
        for mode, extra in (("live (--kubeconfig)", ()), ("embedded (--cluster)", ("--cluster", str(state_dir)))):
            process = ColocateProcess(kubeconfig, certs.directory, work / "serve.log", ("--log-level", "warning"))
            if extra:  # same command line, embedded state instead of the API server
                process.kill()
                process = _embedded(certs.directory, state_dir, work)
            try:
                results[mode] = (
                    await wait_ready(process.health_port),
                    await throughput(process.port, certs.ca, seconds),
                )
            finally:
                process.kill()

    print(f"objects: {namespaces} namespaces, {profiles} profiles")
    print(f"live, in process: ready in {ready_in:.2f}s, cache {memory / 2**20:.1f} MiB (tracemalloc, whole process)")
    print(
        f"live, 100 profile updates: visible in {burst * 1000:.0f} ms, "
        f"{publishes - 1} snapshot publishes after the first"
    )
    for mode, (ready, rate) in results.items():
        print(f"{mode:>22}: ready in {ready:.2f}s, {rate:.0f} admissions/s (/mutate-pod, 16 concurrent)")


def _embedded(cert_dir: Path, state_dir: Path, work: Path) -> ColocateProcess:
    process = ColocateProcess.__new__(ColocateProcess)
    import subprocess
    import sys

    from tests.support.cluster import free_port

    process.port, process.health_port, process.log = free_port(), free_port(), work / "embedded.log"
    process.process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "colocate.main",
            "--log-level",
            "warning",
            "serve",
            "--cluster",
            str(state_dir),
            "--cert-dir",
            str(cert_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(process.port),
            "--health-probe-bind-address",
            f"127.0.0.1:{process.health_port}",
            "--metrics-bind-address",
            "0",
        ],
        stdout=process.log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    return process


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--profiles", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(main(args.namespaces, args.profiles, args.seconds))

"""Sizing (not a test): the resident memory of `colocate serve` per object it watches.

For each scenario a fresh API-server stand-in (tests/support/apiserver.py, on 127.0.0.1) is filled
with objects as kube-apiserver returns them (uid, resourceVersion, managedFields, a pod's status),
then a real `colocate serve --kubeconfig` lists and watches it. Once `/metrics` says the served
state holds every object (`colocate_cluster_state_objects`), and after `--settle` seconds, the
server's resident memory (the process and its children, from /proc) is sampled; its peak (VmHWM,
the initial list included) and the CPU time it took to get there are printed beside it. Every
scenario is reported as an increment over the empty cluster:

- `profiles`: N ClusterColocationProfiles (and the PriorityClass they name);
- `namespaces`: N labelled Namespaces;
- `pods`: N running, Deployment-owned pods (the admission benchmark's pod, with its status), which
  the webhook watches for the ElasticQuota checks (`webhook/watched.py`);
- `all`: all of them at once (is memory additive?); then `--churn-rate` pod MODIFIED events a
  second for `--churn-seconds`, and the server CPU each costs (every worker pays it for every pod
  event of the cluster, admitted by it or not).

Bounded: each scenario has `--timeout` seconds to load; everything stops by itself.

    .venv/bin/python -m benchmarks.sizing_bench [--profiles 1000] [--namespaces 10000] [--pods 100000]
                                                [--workers 1] [--settle 5] [--timeout 600]
                                                [--churn-rate 200] [--churn-seconds 10]
                                                [--scenarios profiles,namespaces,pods,all]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import re
import ssl
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.admission_bench import realistic_pod
from tests.support.apiserver import ApiServer
from tests.support.cluster import ColocateProcess, make_certs

CREATED = "2026-11-23T10:00:00Z"
MANAGER = {
    "manager": "kube-controller-manager",
    "operation": "Update",
    "apiVersion": "v1",
    "time": CREATED,
    "fieldsType": "FieldsV1",
}


def _metadata(name: str, namespace: str = "", **extra: Any) -> dict[str, Any]:
    metadata = {"name": name, "uid": str(uuid.uuid4()), "creationTimestamp": CREATED, **extra}
    if namespace:
        metadata["namespace"] = namespace
    return metadata


def profiles(count: int) -> Iterator[dict[str, Any]]:
    yield {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _metadata("koord-batch"),
        "value": 5000,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "batch pods",
    }
    for i in range(count):
        yield {
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": _metadata(
                f"team-{i:05d}-batch",
                generation=1,
                managedFields=[
                    {
                        **MANAGER,
                        "manager": "kubectl-client-side-apply",
                        "fieldsV1": {"f:spec": {"f:namespaceSelector": {}, "f:selector": {}, "f:qosClass": {}}},
                    }
                ],
            ),
            "spec": {
                "namespaceSelector": {"matchLabels": {"team": f"team-{i % 500}"}},
                "selector": {"matchLabels": {"app": f"app-{i}", "koordinator.sh/enable-colocation": "true"}},
                "qosClass": "BE",
                "priorityClassName": "koord-batch",
                "koordinatorPriority": 1000,
                "schedulerName": "koord-scheduler",
                "labels": {"koordinator.sh/mutated": "true"},
                "annotations": {"colocate.example.com/profile": f"team-{i:05d}-batch"},
            },
        }


def namespaces(count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        name = f"ns-{i:05d}"
        yield {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _metadata(
                name,
                labels={
                    "kubernetes.io/metadata.name": name,
                    "team": f"team-{i % 500}",
                    "environment": ("prod", "staging", "dev")[i % 3],
                },
                annotations={"owner": f"team-{i % 500}@example.com"},
                managedFields=[{**MANAGER, "manager": "kubectl-create", "fieldsV1": {"f:metadata": {"f:labels": {}}}}],
            ),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }


def pods(count: int) -> Iterator[dict[str, Any]]:
    template = realistic_pod()
    for i in range(count):
        pod = copy.deepcopy(template)
        metadata = pod["metadata"]
        namespace = f"ns-{i % 1000:05d}"
        metadata.update(
            _metadata(
                f"{metadata['generateName']}{i:06x}",
                namespace,
                managedFields=[
                    {**MANAGER, "fieldsV1": {"f:metadata": {"f:labels": {}, "f:ownerReferences": {}}, "f:spec": {}}},
                    {
                        **MANAGER,
                        "manager": "kubelet",
                        "subresource": "status",
                        "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:podIP": {}}},
                    },
                ],
            )
        )
        pod["spec"]["nodeName"] = f"node-{i % 5000:04d}"
        ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        pod["status"] = {
            "phase": "Running",
            "hostIP": f"192.168.{(i // 5000) % 256}.{i % 250}",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": CREATED,
            "qosClass": "Guaranteed",
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": CREATED}
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "executor",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": pod["spec"]["containers"][0]["image"],
                    "imageID": "registry.example.com/analytics/spark-executor@sha256:" + "ab" * 32,
                    "containerID": f"containerd://{uuid.uuid4().hex}{uuid.uuid4().hex}",
                    "state": {"running": {"startedAt": CREATED}},
                    "lastState": {},
                }
            ],
        }
        yield pod


@dataclass(frozen=True)
class Scenario:
    name: str
    objects: Callable[[], Iterator[dict[str, Any]]]
    expected: dict[str, int]  # kind -> count the served state must hold


@dataclass(frozen=True)
class Measured:
    rss: int  # bytes, median of the samples after settling
    peak: int  # bytes, the largest VmHWM of the process tree
    ready_seconds: float  # start to every object served
    cpu_seconds: float  # user + system of the process tree until then
    processes: int
    event_cpu_us: float | None = None  # server CPU per pod watch event, idle CPU subtracted


async def churn_cost(api: ApiServer, pid: int, args: argparse.Namespace) -> float:
    """Server CPU (µs) per pod MODIFIED event at `--churn-rate` events/s: what every worker pays
    for the pods the cluster creates, schedules and updates, whether or not it admits them."""
    idle_before = tree_cpu(pid)
    await asyncio.sleep(args.churn_seconds)  # the idle cost of the same interval (bookmarks, timers)
    idle = tree_cpu(pid) - idle_before
    changed = pods(args.pods)
    sent, started = 0, time.monotonic()
    cpu_before = tree_cpu(pid)
    while (elapsed := time.monotonic() - started) < args.churn_seconds:
        while sent < elapsed * args.churn_rate:
            pod = next(changed)
            pod["metadata"]["labels"]["churn"] = "1"
            api.apply(pod)
            sent += 1
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.0)  # the last burst's snapshot
    busy = tree_cpu(pid) - cpu_before
    return max(0.0, busy - idle * (args.churn_seconds + 1.0) / args.churn_seconds) / sent * 1e6


def _status_fields(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as status:
        return {
            line.split(":")[0]: int(line.split()[1]) * 1024 for line in status if line.startswith(("VmRSS:", "VmHWM:"))
        }


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime, stime in clock ticks (USER_HZ = 100)


def tree(root: int) -> list[int]:
    """`root` and its descendants."""
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                pending.extend(int(child) for child in children.read().split())
        except OSError:
            continue
        found.append(pid)
    return found


def tree_memory(root: int) -> tuple[int, int, int]:
    """(RSS, summed peak RSS, process count) of `root` and its descendants."""
    rss = peak = count = 0
    for pid in tree(root):
        try:
            fields = _status_fields(pid)
        except OSError:
            continue
        rss, peak, count = rss + fields["VmRSS"], peak + fields["VmHWM"], count + 1
    return rss, peak, count


def tree_cpu(root: int) -> float:
    total = 0.0
    for pid in tree(root):
        try:
            total += _cpu_seconds(pid)
        except OSError:
            continue
    return total


SERIES = re.compile(r'^colocate_cluster_state_objects\{kind="([^"]+)"\} ([0-9.e+]+)$', re.MULTILINE)


async def served_counts(session: aiohttp.ClientSession, base: str) -> dict[str, int] | None:
    """The objects of each kind in the served state; None until the server is ready."""
    try:
        async with session.get(f"{base}/readyz") as ready:
            if ready.status != 200:
                return None
        async with session.get(f"{base}/metrics") as answer:
            text = await answer.text()
    except aiohttp.ClientError:
        return None
    return {kind: int(float(value)) for kind, value in SERIES.findall(text)}


def loaded(counts: dict[str, int] | None, expected: dict[str, int]) -> bool:
    return counts is not None and all(counts.get(kind) == count for kind, count in expected.items())


async def measure(scenario: Scenario, work: Path, args: argparse.Namespace) -> Measured:
    async with ApiServer(bookmark_interval=5.0) as api:
        for obj in scenario.objects():
            api.apply(obj)
        kubeconfig = api.write_kubeconfig(work / f"{scenario.name}.kubeconfig")
        certs = make_certs(work / "certs")
        started = time.monotonic()
        server = ColocateProcess(
            kubeconfig,
            certs.directory,
            work / f"{scenario.name}.log",
            extra=["--log-level", "warning", "--workers", str(args.workers)],
        )
        try:
            context = ssl.create_default_context(cafile=str(certs.ca))
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
                base = f"http://127.0.0.1:{server.health_port}"  # /readyz and /metrics (webhook.probes)
                while not loaded(counts := await served_counts(session, base), scenario.expected):
                    if server.process.poll() is not None:
                        raise RuntimeError(
                            f"colocate exited ({server.process.returncode}); see {work / f'{scenario.name}.log'}"
                        )
                    if time.monotonic() - started > args.timeout:
                        raise TimeoutError(f"{scenario.name}: not loaded within {args.timeout}s: {counts}")
                    await asyncio.sleep(0.2)
                ready = time.monotonic() - started
                cpu = tree_cpu(server.process.pid)
                await asyncio.sleep(args.settle)  # let the loading garbage be freed before sampling
                samples = []
                for _ in range(5):
                    samples.append(tree_memory(server.process.pid))
                    await asyncio.sleep(0.5)
                event_cpu = (
                    await churn_cost(api, server.process.pid, args)
                    if scenario.name == "all" and args.churn_seconds > 0 and args.pods
                    else None
                )
        finally:
            server.terminate()
            await server.wait(30)
    return Measured(
        rss=int(statistics.median(s[0] for s in samples)),
        peak=max(s[1] for s in samples),
        ready_seconds=ready,
        cpu_seconds=cpu,
        processes=samples[-1][2],
        event_cpu_us=event_cpu,
    )


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    def everything() -> Iterator[dict[str, Any]]:
        yield from profiles(args.profiles)
        yield from namespaces(args.namespaces)
        yield from pods(args.pods)

    return [
        Scenario("empty", lambda: iter(()), {}),
        Scenario(
            "profiles", lambda: profiles(args.profiles), {"ClusterColocationProfile": args.profiles, "PriorityClass": 1}
        ),
        Scenario("namespaces", lambda: namespaces(args.namespaces), {"Namespace": args.namespaces}),
        Scenario("pods", lambda: pods(args.pods), {"Pod": args.pods}),
        Scenario(
            "all",
            everything,
            {
                "ClusterColocationProfile": args.profiles,
                "PriorityClass": 1,
                "Namespace": args.namespaces,
                "Pod": args.pods,
            },
        ),
    ]


def object_sizes() -> str:
    samples = {"profile": list(profiles(1))[-1], "namespace": next(namespaces(1)), "pod": next(pods(1))}
    return ", ".join(f"{name} {len(json.dumps(obj)):,} B" for name, obj in samples.items())


async def main(args: argparse.Namespace) -> None:
    counts = {"profiles": args.profiles, "namespaces": args.namespaces, "pods": args.pods}
    print(
        f"colocate serve --kubeconfig (the API-server stand-in), --workers {args.workers}; "
        f"{args.profiles:,} profiles, {args.namespaces:,} namespaces, {args.pods:,} pods"
    )
    print(f"object JSON as listed, managedFields included (the webhook drops them): {object_sizes()}")
    results: dict[str, Measured] = {}
    chosen = [s for s in scenarios(args) if s.name in {"empty", *args.scenarios.split(",")}]
    with tempfile.TemporaryDirectory(prefix="colocate-sizing-") as temporary:
        for scenario in chosen:
            results[scenario.name] = measured = await measure(scenario, Path(temporary), args)
            print(
                f"  {scenario.name:<10} RSS {measured.rss / 2**20:7.1f} MiB  peak {measured.peak / 2**20:7.1f} MiB  "
                f"loaded in {measured.ready_seconds:6.1f} s wall, {measured.cpu_seconds:6.1f} s CPU  "
                f"({measured.processes} processes)",
                flush=True,
            )
    base = results["empty"]
    print(f"\nempty cluster: {base.rss / 2**20:.1f} MiB")
    print("scenario    objects     RSS over empty   peak over empty   per object")
    for name, measured in results.items():
        if name == "empty":
            continue
        count = counts.get(name, sum(counts.values()))  # `all`: every object
        extra, peak = measured.rss - base.rss, measured.peak - base.peak
        each = f"{extra / count / 1024:8.2f} KiB" if name in counts else "       -"
        print(f"{name:<10}  {count:>8,}  {extra / 2**20:10.1f} MiB  {peak / 2**20:12.1f} MiB  {each}")
    if results.keys() >= {*counts, "all"}:
        added = sum(results[name].rss - base.rss for name in counts)
        print(
            f"sum of the three increments: {added / 2**20:.1f} MiB; all at once: "
            f"{(results['all'].rss - base.rss) / 2**20:.1f} MiB"
        )
    if "all" in results and results["all"].event_cpu_us is not None:
        print(
            f"pod watch events at {args.churn_rate:g}/s for {args.churn_seconds:g}s, with everything loaded: "
            f"{results['all'].event_cpu_us:.0f} µs of server CPU per event (idle CPU subtracted)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=int, default=1_000)
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers (memory is per worker)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after loading before sampling")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a scenario may take to load")
    parser.add_argument(
        "--scenarios",
        default="profiles,namespaces,pods,all",
        help="which to run besides the empty baseline (comma-separated)",
    )
    parser.add_argument("--churn-rate", type=float, default=200.0, help="pod watch events/s sent in 'all'")
    parser.add_argument("--churn-seconds", type=float, default=10.0, help="how long (0: skip)")
    asyncio.run(main(parser.parse_args()))

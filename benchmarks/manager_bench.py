"""Manager benchmark (a script that prints numbers, not a test).

    python benchmarks/manager_bench.py [--nodes 5000] [--pods-per-node 30] [--repeat 3] [--latency 20]

1. One full recalculation: every node of a cluster held in memory (`--nodes` nodes of 64 cores /
   256Gi, each with `--pods-per-node` pods — two thirds prod, one third batch — a fresh NodeMetric
   reporting every pod's usage, and a two-zone NodeResourceTopology on every fourth node) planned by
   the manager's reconciler as after a start: batch and mid resources, the NUMA split, the write
   decision, the NodeSLO and the NodeMetric spec of each node. Prints the CPU seconds of the round
   (best and median of `--repeat`), the peak Python memory the round allocated (tracemalloc, a
   separate run) and the process's peak RSS.
2. The latency from a NodeMetric change to the node's status patch, against the API-server
   stand-in of the tests (`tests/support/apiserver.py`, on 127.0.0.1): `manager run --kubeconfig`
   in this process, one node; each of `--latency` samples writes a NodeMetric whose prod usage
   moves the batch cpu by more than the diff threshold, then waits until the stand-in holds the new
   batch-cpu. Prints min / median / max.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colocate.cluster.store import ClusterStore  # noqa: E402
from policies.apis.timestamps import parse_time  # noqa: E402
from scheduler_plugins.clock import fixed_clock  # noqa: E402
from scheduler_plugins.manager.cluster import MANAGER_KINDS, ManagerView  # noqa: E402
from scheduler_plugins.manager.reconciler import Reconciler  # noqa: E402

NOW = "2024-05-01T10:01:00Z"
CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
    "data": {"colocation-config": '{"enable": true, "cpuReclaimThresholdPercent": 60}'},
}


def node_objects(i: int, pods_per_node: int) -> list[tuple[str, dict[str, Any]]]:
    name = f"node-{i:05d}"
    resources = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    out: list[tuple[str, dict[str, Any]]] = [
        (
            "Node",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"pool": f"p{i % 4}"}},
                "status": {"capacity": dict(resources), "allocatable": dict(resources)},
            },
        ),
    ]
    metrics = []
    for j in range(pods_per_node):
        batch = j % 3 == 2
        pod_name = f"{name}-pod-{j}"
        requests = (
            {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "2Gi"}
            if batch
            else {"cpu": "1", "memory": "4Gi"}
        )
        labels = {"koordinator.sh/qosClass": "BE" if batch else "LS", "app": f"a{j % 5}"}
        out.append(
            (
                "Pod",
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": pod_name, "namespace": "default", "labels": labels},
                    "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {"requests": requests}}]},
                    "status": {"phase": "Running"},
                },
            )
        )
        metrics.append(
            {
                "namespace": "default",
                "name": pod_name,
                "priority": "koord-batch" if batch else "koord-prod",
                "podUsage": {"resources": {"cpu": f"{300 + j * 10}m", "memory": f"{1 + j % 3}Gi"}},
            }
        )
    out.append(
        (
            "NodeMetric",
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": name},
                "status": {
                    "updateTime": "2024-05-01T10:00:30Z",
                    "nodeMetric": {
                        "nodeUsage": {"resources": {"cpu": "20", "memory": "80Gi"}},
                        "systemUsage": {"resources": {"cpu": "2", "memory": "8Gi"}},
                    },
                    "podsMetric": metrics,
                },
            },
        )
    )
    if i % 4 == 0:
        zones = [
            {
                "name": f"node-{z}",
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": "32", "allocatable": "32", "available": "32"},
                    {"name": "memory", "capacity": "128Gi", "allocatable": "128Gi", "available": "128Gi"},
                ],
            }
            for z in range(2)
        ]
        out.append(
            (
                "NodeResourceTopology",
                {
                    "apiVersion": "topology.node.k8s.io/v1alpha1",
                    "kind": "NodeResourceTopology",
                    "metadata": {"name": name},
                    "zones": zones,
                },
            )
        )
    return out


def build_view(nodes: int, pods_per_node: int) -> ManagerView:
    store = ClusterStore(MANAGER_KINDS)
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in MANAGER_KINDS}
    for i in range(nodes):
        for kind, obj in node_objects(i, pods_per_node):
            by_kind[kind].append(obj)
    by_kind["ConfigMap"].append(CONFIGMAP)
    for kind, objects in by_kind.items():
        store.replace(kind, objects)
    return ManagerView(store)


def full_round(view: ManagerView) -> tuple[float, int, int]:
    """CPU seconds of one full recalculation, nodes planned, nodes to write."""
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    snapshot = view.snapshot()
    started = time.process_time()
    result = reconciler.reconcile(snapshot)
    elapsed = time.process_time() - started
    return elapsed, len(result.plans), sum(1 for p in result.plans if p.update)


async def latency(samples: int) -> list[float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.scheduler_plugins.manager.helpers import Manager, cluster, node_status, prod_metric
    from tests.support.apiserver import ApiServer

    out: list[float] = []
    async with ApiServer(bookmark_interval=0.2) as api:
        with tempfile.TemporaryDirectory() as directory:
            kubeconfig = api.write_kubeconfig(Path(directory) / "kubeconfig")
            for obj in cluster():
                api.apply(obj)
            manager = Manager(kubeconfig).start()
            try:
                while "kubernetes.io/batch-cpu" not in node_status(api)["allocatable"]:
                    await asyncio.sleep(0.005)
                for sample in range(samples):
                    used = "2" if sample % 2 else "10"  # 16.2 <-> 8.2 batch cores: always past the threshold
                    expected = "16200" if sample % 2 else "8200"
                    started = time.perf_counter()
                    api.apply(prod_metric(used))
                    while node_status(api)["allocatable"].get("kubernetes.io/batch-cpu") != expected:
                        await asyncio.sleep(0.001)
                    out.append(time.perf_counter() - started)
            finally:
                await manager.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=int, default=20, help="latency samples (0: skip)")
    args = parser.parse_args()

    started = time.perf_counter()
    view = build_view(args.nodes, args.pods_per_node)
    print(f"cluster: {args.nodes} nodes x {args.pods_per_node} pods, built in {time.perf_counter() - started:.1f}s")
    times = []
    for _ in range(args.repeat):
        gc.collect()
        elapsed, planned, updates = full_round(view)
        times.append(elapsed)
    print(
        f"full recalculation: best {min(times):.2f} CPU s, median {statistics.median(times):.2f} CPU s "
        f"({planned} nodes planned, {updates} to write; {min(times) / planned * 1e6:.0f} us per node)"
    )
    gc.collect()
    tracemalloc.start()
    full_round(view)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak Python memory allocated by the round: {peak / 2**20:.0f} MiB; process peak RSS {rss:.0f} MiB")
    if args.latency:
        samples = asyncio.run(latency(args.latency))
        print(
            f"NodeMetric change -> status patch ({len(samples)} samples): min {min(samples) * 1000:.1f} ms, "
            f"median {statistics.median(samples) * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()

"""ElasticQuota / DeviceShare / NodeNUMAResource benchmarks (a script that prints numbers).

    python benchmarks/quota_device_bench.py [--quick]

1. `simulate` on 1,000 nodes (20 % of them GPU nodes with a Device object and a
   NodeResourceTopology) with 200 quotas (20 parents of 9 leaves each), pending pods charged to the
   leaves (LS pods, LSR pods that bind CPUs, shared-GPU pods), once with ElasticQuota, DeviceShare
   and NodeNUMAResource enabled and once without them (the built-in profile).
2. The quota tree's recomputation cost per pod event at 1,000 quotas: a pod added to or removed
   from a leaf quota, then the runtime read (as the next PreFilter does), mean and p99.
Every loop is bounded by a count.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from typing import Any

from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.plugins.elasticquota.args import parse_args as quota_args
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework

NOW = "2024-05-01T10:01:00Z"
QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PLUGINS = ("NodeNUMAResource", "DeviceShare", "ElasticQuota")
WITH_PLUGINS = {
    "profiles": [
        {
            "plugins": {
                "preFilter": {"enabled": [{"name": p} for p in PLUGINS]},
                "filter": {"enabled": [{"name": "NodeNUMAResource"}, {"name": "DeviceShare"}]},
                "preScore": {"enabled": [{"name": "DeviceShare"}]},
                "score": {"enabled": [{"name": "DeviceShare", "weight": 1}]},
                "reserve": {"enabled": [{"name": p} for p in PLUGINS]},
                "preBind": {"enabled": [{"name": "NodeNUMAResource"}, {"name": "DeviceShare"}]},
            }
        }
    ]
}
GPU_RESOURCES = {
    "nvidia.com/gpu": "4",
    "koordinator.sh/gpu-core": "400",
    "koordinator.sh/gpu-memory-ratio": "400",
    "koordinator.sh/gpu-memory": "320Gi",
}


def cpu_topology() -> str:
    return json.dumps(
        {
            "detail": [
                {"id": t * 32 + s * 16 + c, "core": s * 16 + c, "socket": s, "node": s}
                for t in range(2)
                for s in range(2)
                for c in range(16)
            ]
        }
    )


def nodes(count: int, gpu_share: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    gpus = int(count * gpu_share)
    for i in range(count):
        name = f"node-{i:05d}"
        allocatable = {"cpu": "64", "memory": "256Gi", "pods": "110", **(GPU_RESOURCES if i < gpus else {})}
        out.append({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}})
        out.append(
            {
                "kind": "NodeMetric",
                "metadata": {"name": name},
                "status": {
                    "updateTime": "2024-05-01T10:00:00Z",
                    "nodeMetric": {"nodeUsage": {"resources": {"cpu": "8", "memory": "32Gi"}}},
                },
            }
        )
        out.append(
            {
                "kind": "NodeResourceTopology",
                "metadata": {"name": name, "annotations": {"node.koordinator.sh/cpu-topology": cpu_topology()}},
            }
        )
        if i < gpus:
            out.append(
                {
                    "kind": "Device",
                    "metadata": {"name": name},
                    "spec": {
                        "devices": [
                            {
                                "type": "gpu",
                                "minor": m,
                                "health": True,
                                "resources": {"koordinator.sh/gpu-memory": "80Gi"},
                            }
                            for m in range(4)
                        ]
                    },
                }
            )
    return out


def quotas(parents: int, leaves_per_parent: int) -> list[dict[str, Any]]:
    out = []
    for p in range(parents):
        out.append(
            {
                "kind": "ElasticQuota",
                "metadata": {
                    "name": f"parent-{p}",
                    "namespace": "quotas",
                    "labels": {"quota.scheduling.koordinator.sh/is-parent": "true"},
                },
                "spec": {"min": {"cpu": "100", "memory": "400Gi"}, "max": {"cpu": "4000", "memory": "16Ti"}},
            }
        )
        for leaf in range(leaves_per_parent):
            out.append(
                {
                    "kind": "ElasticQuota",
                    "metadata": {
                        "name": f"leaf-{p}-{leaf}",
                        "namespace": "quotas",
                        "labels": {"quota.scheduling.koordinator.sh/parent": f"parent-{p}"},
                    },
                    "spec": {"min": {"cpu": "10", "memory": "40Gi"}, "max": {"cpu": "400", "memory": "1600Gi"}},
                }
            )
    return out


def pod(i: int, leaves: list[str], rng: random.Random) -> dict[str, Any]:
    kind = i % 5
    labels = {QUOTA_LABEL: rng.choice(leaves)}
    requests: dict[str, str] = {"cpu": "2", "memory": "4Gi"}
    if kind == 0:  # LSR: binds 4 whole CPUs
        labels["koordinator.sh/qosClass"] = "LSR"
        requests = {"cpu": "4", "memory": "8Gi"}
    elif kind == 1:  # a shared GPU
        requests = {
            "cpu": "2",
            "memory": "8Gi",
            "koordinator.sh/gpu-core": "50",
            "koordinator.sh/gpu-memory-ratio": "50",
        }
    else:
        labels["koordinator.sh/qosClass"] = "LS"
    return {
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "bench", "labels": labels},
        "spec": {
            "priority": 9500,
            "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
        },
    }


def bench_simulate(node_count: int, pods: int, with_plugins: bool) -> float:
    rng = random.Random(1)
    tree = quotas(20, 9)
    leaves = [q["metadata"]["name"] for q in tree if q["metadata"]["name"].startswith("leaf-")]
    state = ClusterState.from_objects([*nodes(node_count, 0.2), *tree, *(pod(i, leaves, rng) for i in range(pods))])
    config = parse_config(WITH_PLUGINS if with_plugins else {}, in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), state, fixed_clock(parse_time(NOW)))
    gc.collect()
    gc.freeze()
    report = simulate(Scheduler(fwk, state, config.percentage_of_nodes_to_score), state)
    scheduled = sum(1 for p in report.placements if p.scheduled)
    rate = len(report.placements) / report.seconds
    label = "with quota+device+numa" if with_plugins else "without them          "
    print(
        f"simulate  {label} nodes={node_count} quotas={len(tree)} pods={pods} scheduled={scheduled} "
        f"seconds={report.seconds:6.2f} pods/s={rate:7.1f}"
    )
    return rate


def _timed(events: list[PodInfo], manager: QuotaManager, read: Any) -> list[float]:
    timings = []
    for i, p in enumerate(events):
        started = time.perf_counter()
        if i % 2:
            manager.remove_pod(events[i - 1].key)
        else:
            manager.add_pod(p)
        read(p)
        timings.append((time.perf_counter() - started) * 1000)
    return sorted(timings)


def bench_quota_events(quota_count: int, events: int) -> None:
    parents = quota_count // 10
    tree = quotas(parents, 9)[:quota_count]
    manager = QuotaManager(quota_args(None, ""), lambda: {"cpu": 64_000_000, "memory": 256 << 40})
    for q in tree:
        manager.set_quota(q["metadata"]["name"], q)
    rng = random.Random(2)
    leaves = [q["metadata"]["name"] for q in tree if q["metadata"]["name"].startswith("leaf-")]
    pods = [PodInfo(pod(i, leaves, rng)) for i in range(events * 2)]
    for p in pods[events:]:
        manager.add_pod(p)
    manager.states()
    for label, read in (
        ("path root->quota (PreFilter)", lambda p: manager.state_of(manager.quota_of(p))),
        ("whole tree (quota command)", lambda p: manager.states()),
    ):
        timings = _timed(pods[:events], manager, read)
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        print(
            f"quota tree  quotas={len(manager.states()) - 1} events={events} pod event + {label}: "
            f"mean={statistics.fmean(timings):6.3f} ms p99={p99:6.3f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer pods and events")
    args = parser.parse_args()
    pods = 300 if args.quick else 1000
    for with_plugins in (False, True):
        bench_simulate(1000, pods, with_plugins)
        gc.unfreeze()
    bench_quota_events(1000, 100 if args.quick else 400)


if __name__ == "__main__":
    main()

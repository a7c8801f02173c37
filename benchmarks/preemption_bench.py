"""Preemption benchmark (a script that prints numbers, not a test).

    python -m benchmarks.preemption_bench [--nodes 5000] [--pods 20] [--runs 3]

The cost preemption adds to one unschedulable pod: a cluster of `--nodes` full nodes (32 cpu each,
held by eight 4-cpu pods of priority 1000, one in eight of them covered by a PodDisruptionBudget
that allows no disruption), then `--pods` prod pods (priority 9500, 4 cpu) scheduled one by one
with the default profile (DefaultPreemption in postFilter). Each pod fails Filter on every node,
DefaultPreemption evaluates max(10 % of the nodes, 100) candidates (kube-scheduler's
`minCandidateNodesPercentage`/`Absolute`), deletes one victim and the pod is placed on the
nominated node. The same pods with `preemptionPolicy: Never` (Filter fails everywhere, PostFilter
gives up at once) are the baseline: the difference is what preemption costs. Prints the median
per pod (wall and process CPU time) of `--runs` runs, with the range.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from typing import Any

from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.wiring import build_framework

NOW = "2024-05-01T10:01:00Z"
PODS_PER_NODE = 8


def cluster(nodes: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        out.append(
            {
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
            }
        )
        for j in range(PODS_PER_NODE):
            out.append(
                {
                    "kind": "Pod",
                    "metadata": {
                        "name": f"low-{i:05d}-{j}",
                        "namespace": "batch",
                        "uid": f"uid-{i}-{j}",
                        "labels": {"app": f"app-{j}"},
                    },
                    "spec": {
                        "nodeName": name,
                        "priority": 1000,
                        "containers": [{"name": "main", "resources": {"requests": {"cpu": "4", "memory": "8Gi"}}}],
                    },
                    "status": {"phase": "Running", "startTime": f"2024-05-01T0{j}:00:00Z"},
                }
            )
    out.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "app-0", "namespace": "batch"},
            "spec": {"minAvailable": "100%", "selector": {"matchLabels": {"app": "app-0"}}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    return out


def preemptor(i: int, never: bool) -> PodInfo:
    spec: dict[str, Any] = {
        "priority": 9500,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "4", "memory": "8Gi"}}}],
    }
    if never:
        spec["preemptionPolicy"] = "Never"
    return PodInfo({"kind": "Pod", "metadata": {"name": f"prod-{i}", "namespace": "shop"}, "spec": spec})


def run(objects: list[dict[str, Any]], pods: int, never: bool) -> tuple[float, float, int]:
    """Seconds and CPU seconds per pod, and how many were placed."""
    cluster_state = ClusterState.from_objects(copy.deepcopy(objects))
    config = parse_config({"profiles": [{"schedulerName": "koord-scheduler"}]}, in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), cluster_state, fixed_clock(parse_time(NOW) or 0.0))
    scheduler = Scheduler(fwk, cluster_state)
    gc.collect()
    placed = 0
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(pods):
        placed += scheduler.schedule_one(preemptor(i, never)).scheduled
    wall, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    return wall / pods, cpu_used / pods, placed


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    objects = cluster(options.nodes)
    print(f"cluster: {options.nodes} full nodes, {options.nodes * PODS_PER_NODE} pods of priority 1000")
    for never in (True, False):
        walls, cpus, placed = [], [], 0
        for _ in range(options.runs):
            wall, cpu, placed = run(objects, options.pods, never)
            walls.append(wall)
            cpus.append(cpu)
        label = "preemptionPolicy: Never (baseline)" if never else "preempting"
        print(
            f"{label}: per pod {_summary(walls)} wall, {_summary(cpus)} CPU; "
            f"placed {placed}/{options.pods} (median of {options.runs})"
        )


if __name__ == "__main__":
    main()

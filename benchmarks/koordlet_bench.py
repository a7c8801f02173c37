"""koordlet benchmarks (a script that prints numbers, not a test).

    python benchmarks/koordlet_bench.py [--rounds N]

1. One reconcile round for 110 pods × 3 containers (kubelet's default max pods): every strategy
   enabled (CPUSuppress, CPUEvict, MemoryEvict, CgroupReconcile with memory QoS on, CPUBurst
   auto), on a cgroup v1 tree of real files in a temporary directory: the time to compute the
   round (pure), the time to apply it (the leveled executor writing files) and the write counts —
   a second identical round must write nothing.
2. One collection round on this machine: the real /proc plus the cgroup files of the same 110
   pods (cpuacct.usage, memory.usage_in_bytes, memory.stat): the CPU time (process time) per round.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from colocate.cluster.store import ClusterStore
from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.executor import ResourceExecutor
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout, detect_version
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.framework import QOSManager
from scheduler_plugins.koordlet.metricsadvisor.cache import MetricCache
from scheduler_plugins.koordlet.metricsadvisor.collector import Collector
from scheduler_plugins.koordlet.node_round import round_input  # noqa: E402
from scheduler_plugins.koordlet.pods import pod_view
from scheduler_plugins.koordlet.states import node_state
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.topology import flat_processors
from scheduler_plugins.koordlet.usage import ResourceUsage, Usage

PODS, CONTAINERS = 110, 3
GATES = "BECPUEvict=true,CPUEvict=true,BEMemoryEvict=true,MemoryEvict=true,CgroupReconcile=true"
FILES = [
    r.CPU_SHARES,
    r.CPU_CFS_QUOTA,
    r.CPU_BURST,
    r.CPU_BVT_WARP_NS,
    r.CPU_IDLE,
    r.CPUSET_CPUS,
    r.MEMORY_MIN,
    r.MEMORY_LOW,
    r.MEMORY_HIGH,
    r.MEMORY_WMARK_RATIO,
    r.MEMORY_WMARK_SCALE_FACTOR,
    r.MEMORY_WMARK_MIN_ADJ,
    r.MEMORY_PRIORITY,
    r.MEMORY_USE_PRIORITY_OOM,
    r.MEMORY_OOM_GROUP,
    r.PAGECACHE_ENABLE,
    r.PAGECACHE_SIZE,
    r.CPUACCT_USAGE,
    r.MEMORY_USAGE,
    r.MEMORY_STAT,
]


def pod(i: int) -> dict[str, Any]:
    be = i % 2 == 0
    name = f"pod-{i:03d}"
    if be:
        resources = {
            "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "512Mi"},
            "limits": {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "1Gi"},
        }
    else:
        resources = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "labels": {"koordinator.sh/qosClass": "BE" if be else "LS"},
        },
        "spec": {
            "nodeName": "bench-node",
            "priority": 5500 if be else 9000,
            "containers": [{"name": f"c{j}", "resources": resources} for j in range(CONTAINERS)],
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": f"c{j}", "containerID": f"containerd://{hashlib.sha256(f'{name}-c{j}'.encode()).hexdigest()}"}
                for j in range(CONTAINERS)
            ],
        },
    }


def cluster() -> ClusterStore:
    store = ClusterStore(["Node", "NodeSLO", "Pod"])
    store.replace(
        "Node",
        [
            {
                "kind": "Node",
                "metadata": {"name": "bench-node"},
                "status": {
                    "capacity": {"cpu": "64", "memory": "256Gi"},
                    "allocatable": {
                        "cpu": "64",
                        "memory": "256Gi",
                        "kubernetes.io/batch-cpu": "30000",
                        "kubernetes.io/batch-memory": "100Gi",
                    },
                },
            }
        ],
    )
    enabled = {"enable": True, "minLimitPercent": 100, "lowLimitPercent": 100, "throttlingPercent": 80}
    store.replace(
        "NodeSLO",
        [
            {
                "kind": "NodeSLO",
                "metadata": {"name": "bench-node"},
                "spec": {
                    "resourceUsedThresholdWithBE": {
                        "enable": True,
                        "cpuSuppressPolicy": "cfsQuota",
                        "cpuEvictThresholdPercent": 95,
                        "evictEnabledPriorityThreshold": 6000,
                    },
                    "resourceQOSStrategy": {
                        "lsClass": {"memoryQOS": enabled, "cpuQOS": {"enable": True}},
                        "beClass": {"memoryQOS": enabled, "cpuQOS": {"enable": True}},
                    },
                    "cpuBurstStrategy": {"policy": "auto"},
                },
            }
        ],
    )
    store.replace("Pod", [pod(i) for i in range(PODS)])
    return store


def build_tree(root: Path, layout: CgroupLayout, store: ClusterStore) -> None:
    dirs = {"kubepods", "kubepods/burstable", "kubepods/besteffort"}
    for p in store.objects("Pod"):
        view = pod_view(p, layout)
        dirs.add(view.dir)
        dirs.update(c.dir for c in view.containers if c.dir)
    for d in dirs:
        for resource in FILES:
            path = layout.path(d, resource)
            path.parent.mkdir(parents=True, exist_ok=True)
            initial = {"cpuset.cpus": "0-63", "cpu.cfs_quota_us": "-1", "memory.stat": "total_inactive_file 0\n"}
            path.write_text(initial.get(resource.v1_file, "0") + "\n")


def reconcile(root: Path, rounds: int) -> dict[str, Any]:
    for sub in ("cpu", "cpuacct", "cpuset", "memory"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    layout = CgroupLayout(root, detect_version(root))
    store = cluster()
    build_tree(root, layout, store)
    executor = ResourceExecutor(layout, clock=time.monotonic)
    manager = QOSManager(StrategyOptions(koordlet_gates(GATES)))
    state = node_state(store, "bench-node")
    usage = Usage(
        ResourceUsage(20_000, 64 * 1024**3),
        {f"bench/pod-{i:03d}": ResourceUsage(100, 256 * 1024**2) for i in range(PODS)},
    )
    computes, applies, writes = [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        inp = round_input(state, usage, layout, time.time(), read=executor.read, processors=flat_processors(64))
        report = manager.run_round(inp)
        computed = time.perf_counter()
        stats = executor.apply(report.writes)
        applies.append(time.perf_counter() - computed)
        computes.append(computed - started)
        writes.append((len(report.writes), stats.written, stats.skipped, stats.failed))
    return {
        "pods": PODS,
        "containers": PODS * CONTAINERS,
        "actions_per_round": writes[0][0],
        "first_round": {
            "compute_ms": round(computes[0] * 1e3, 2),
            "apply_ms": round(applies[0] * 1e3, 2),
            "written": writes[0][1],
            "failed": writes[0][3],
        },
        "second_round_written": writes[1][1],
        "steady_round_ms_p50": {
            "compute": round(statistics.median(computes[1:]) * 1e3, 2),
            "apply": round(statistics.median(applies[1:]) * 1e3, 2),
        },
    }


def collect(root: Path, rounds: int) -> dict[str, Any]:
    layout = CgroupLayout(root, detect_version(root))
    store = cluster()
    state = node_state(store, "bench-node")
    collector = Collector(layout, MetricCache())
    cpu, wall = [], []
    for i in range(rounds):
        started_cpu, started = time.process_time(), time.perf_counter()
        collector.collect(state, float(i))
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    return {
        "pods": PODS,
        "files_read_per_round": collector.reads + 2,
        "cpu_ms_per_round_p50": round(statistics.median(cpu) * 1e3, 2),
        "wall_ms_per_round_p50": round(statistics.median(wall) * 1e3, 2),
        "cpu_percent_of_one_core_at_1s_interval": round(statistics.median(cpu) * 100, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    # cgroupfs lives in memory: so does the benchmark's tree when the machine has /dev/shm
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        root = Path(tmp) / "cgroup"
        print(
            json.dumps(
                {
                    "reconcile_round": reconcile(root, max(args.rounds, 2)),
                    "collection_round": collect(root, max(args.rounds, 2)),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()

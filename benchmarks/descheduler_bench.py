"""Descheduler benchmark (a script that prints numbers, not a test).

    python benchmarks/descheduler_bench.py [--nodes 1000] [--pods 30000] [--repeat 3] [--migration]

One LowNodeLoad round (the default plugin set plus LowNodeLoad, nodeFit on, anomaly detection
acting at once) over a cluster held in memory: `--nodes` nodes with fresh NodeMetrics reporting
every pod's usage, `--pods` ReplicaSet pods spread evenly; a tenth of the nodes are hot (about 85 %
cpu), four tenths cold (about 15 %), the rest in between. Evictions go to the in-memory store, so
every repeat starts from a fresh copy. Prints the round's wall time (best and median of
`--repeat`), how many nodes were classified and pods evicted, the peak Python memory the round
allocated (tracemalloc, a separate run) and the process's peak RSS. With `--migration` the
MigrationController migrates (`defaultJobMode: ReservationFirst`, jobs and Reservations in the
in-memory store): every eviction becomes a PodMigrationJob after the workload limits are checked,
and the round ends with one reconcile pass (each job started and its Reservation created).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
import tracemalloc
from typing import Any

from colocate.cluster.store import ClusterStore
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.descheduler.backends import StoreEvictions
from scheduler_plugins.descheduler.cluster import DESCHEDULER_KINDS, DeschedulerView
from scheduler_plugins.descheduler.framework.config import parse_config
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.migration.backend import StoreMigrationBackend
from scheduler_plugins.descheduler.registry import in_tree_registry

NOW = "2024-05-01T10:01:00Z"
CONFIG = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerConfiguration",
    "deschedulingInterval": "0s",
    "profiles": [
        {
            "name": "bench",
            "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
            "pluginConfig": [
                {
                    "name": "LowNodeLoad",
                    "args": {
                        "lowThresholds": {"cpu": 30, "memory": 40},
                        "highThresholds": {"cpu": 70, "memory": 80},
                        "anomalyCondition": {"consecutiveAbnormalities": 1},
                    },
                }
            ],
        }
    ],
}


def cluster(nodes: int, pods: int) -> dict[str, list[dict[str, Any]]]:
    per_node = pods // nodes
    out: dict[str, list[dict[str, Any]]] = {"Node": [], "Pod": [], "NodeMetric": []}
    for i in range(nodes):
        name = f"node-{i:05d}"
        out["Node"].append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
            }
        )
        share = 0.85 if i % 10 == 0 else 0.15 if i % 10 < 5 else 0.5  # of 64 cores
        usage_m = int(64000 * share / per_node)
        metrics = []
        for j in range(per_node):
            pod = f"web-{i:05d}-{j:03d}"
            out["Pod"].append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": pod,
                        "namespace": "default",
                        "labels": {"app": f"web-{j % 20}"},
                        "ownerReferences": [
                            {"kind": "ReplicaSet", "name": f"web-{j % 20}", "uid": f"rs-{j % 20}", "controller": True}
                        ],
                        "creationTimestamp": f"2024-04-{1 + j % 28:02d}T00:00:00Z",
                    },
                    "spec": {
                        "nodeName": name,
                        "schedulerName": "koord-scheduler",  # ReservationFirst migrates koord-scheduler's pods
                        "containers": [
                            {
                                "name": "main",
                                "image": "app",
                                "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}},
                            }
                        ],
                    },
                    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
                }
            )
            metrics.append(
                {
                    "namespace": "default",
                    "name": pod,
                    "priority": "koord-prod",
                    "podUsage": {"resources": {"cpu": f"{usage_m}m", "memory": "3Gi"}},
                }
            )
        out["NodeMetric"].append(
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": name},
                "status": {
                    "updateTime": "2024-05-01T10:00:00Z",
                    "nodeMetric": {
                        "nodeUsage": {"resources": {"cpu": f"{int(64000 * share)}m"}},
                        "systemUsage": {"resources": {"cpu": "500m", "memory": "4Gi"}},
                    },
                    "podsMetric": metrics,
                },
            }
        )
    return out


MIGRATION_ARGS = {"name": "MigrationController", "args": {"defaultJobMode": "ReservationFirst"}}


def config_of(migration: bool) -> dict[str, Any]:
    if not migration:
        return CONFIG
    profile = {**CONFIG["profiles"][0]}
    profile["pluginConfig"] = [*profile["pluginConfig"], MIGRATION_ARGS]
    return {**CONFIG, "profiles": [profile]}


def build(objects: dict[str, list[dict[str, Any]]], migration: bool) -> tuple[DeschedulerView, Descheduler]:
    store = ClusterStore(DESCHEDULER_KINDS)
    for kind, items in objects.items():
        store.replace(kind, items)
    view = DeschedulerView(store)
    descheduler = Descheduler(
        parse_config(config_of(migration), in_tree_registry()),
        in_tree_registry(),
        fixed_clock(parse_time(NOW) or 0.0),
        StoreEvictions(store),
        migrations=StoreMigrationBackend(store) if migration else None,
    )
    return view, descheduler


def one_round(objects: dict[str, list[dict[str, Any]]], migration: bool = False) -> tuple[float, RoundReport]:
    view, descheduler = build(objects, migration)
    gc.collect()
    started = time.perf_counter()
    report = descheduler.run_round(1, view.snapshot())
    return time.perf_counter() - started, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--migration", action="store_true", help="migrate (PodMigrationJobs) instead of evicting")
    options = parser.parse_args()
    started = time.perf_counter()
    objects = cluster(options.nodes, options.pods)
    print(f"cluster: {options.nodes} nodes, {options.pods} pods, built in {time.perf_counter() - started:.1f}s")
    times = []
    report = RoundReport(0)
    for _ in range(options.repeat):
        seconds, report = one_round(objects, options.migration)
        times.append(seconds)
    classes: dict[str, int] = {}
    for entry in report.nodes:
        classes[entry.classification] = classes.get(entry.classification, 0) + 1
    print(f"one round: best {min(times):.2f}s, median {statistics.median(times):.2f}s over {options.repeat}")
    print(f"  classified {classes}; evicted {len(report.evictions)} pods, skipped {len(report.skipped)}")
    if options.migration:
        phases: dict[str, int] = {}
        for entry in report.migrations:
            phases[entry.phase] = phases.get(entry.phase, 0) + 1
        print(f"  migrations {len(report.migrations)} {phases}")
    tracemalloc.start()
    one_round(objects, options.migration)  # the store and view are built inside too: measured separately below
    _, peak_all = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    view, descheduler = build(objects, options.migration)
    snapshot = view.snapshot()
    tracemalloc.start()
    descheduler.run_round(1, snapshot)
    _, peak_round = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"peak memory: the round {peak_round / 2**20:.1f} MiB, store + view + round {peak_all / 2**20:.1f} MiB "
        f"(tracemalloc); process peak RSS {rss:.0f} MiB (the objects themselves included)"
    )


if __name__ == "__main__":
    main()

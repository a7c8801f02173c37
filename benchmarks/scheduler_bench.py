"""Scheduler benchmarks (a script that prints numbers, not a test).

    python benchmarks/scheduler_bench.py [--quick] [--runs N]

1. `simulate` throughput: pending pods per second placed by the default plugin set on clusters of
   1,000 and 5,000 nodes with fresh NodeMetrics (half LS pods, half BE pods on batch resources).
2. The same `simulate` on 1,000 nodes with 10 % of the pods in gangs of 8 (Koordinator's gang
   annotations, minMember 8) and 100 Available Reservations each owned by one pod, against the
   same run without gangs or reservations.
3. Extender latency: one filter + one prioritize round trip over HTTP on 127.0.0.1 with
   nodeCacheCapable (NodeNames of every node), p50 / p99, on 500 and 5,000 nodes.
Each line gives wall-clock figures and the process's CPU time (the machine is shared: CPU time is
the steadier figure); with --runs N each measurement is repeated N times and the median is shown
with the range. The extender's client stands in for kube-scheduler (which decodes and encodes in
Go): it uses orjson, so the Python client costs the round trip as little as it can.
Every loop is bounded by a count; the whole run takes about half a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time

import orjson
from aiohttp.test_utils import TestClient, TestServer

from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.extender.server import make_app
from scheduler_plugins.scheduler.extender.service import ExtenderService
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework

NOW = "2024-05-01T10:01:00Z"


def node(i: int) -> dict:
    return {
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}"},
        "status": {
            "allocatable": {
                "cpu": "64",
                "memory": "256Gi",
                "pods": "110",
                "kubernetes.io/batch-cpu": "32000",
                "kubernetes.io/batch-memory": "128Gi",
            }
        },
    }


def metric(i: int, rng: random.Random) -> dict:
    return {
        "kind": "NodeMetric",
        "metadata": {"name": f"node-{i:05d}"},
        "status": {
            "updateTime": "2024-05-01T10:00:00Z",
            "nodeMetric": {
                "nodeUsage": {"resources": {"cpu": f"{rng.randint(2, 40)}", "memory": f"{rng.randint(8, 200)}Gi"}}
            },
        },
    }


def pod(i: int) -> dict:
    if i % 2:
        labels, priority = {"koordinator.sh/qosClass": "LS"}, 9500
        requests = {"cpu": "2", "memory": "4Gi"}
    else:
        labels, priority = {"koordinator.sh/qosClass": "BE"}, 5500
        requests = {"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "4Gi"}
    return {
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "bench", "labels": labels},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
        },
    }


GANG_SIZE = 8
RESERVATIONS = 100


def with_gangs_and_reservations(objects: list[dict], nodes: int, rng: random.Random) -> list[dict]:
    """Every 10th pod and the 7 after it form a gang (10 % of the pods in gangs of 8); the first
    RESERVATIONS pods not in a gang each own an Available Reservation of their size on a random node."""
    pods = [o for o in objects if o["kind"] == "Pod"]
    for start in range(0, len(pods) - GANG_SIZE + 1, GANG_SIZE * 10):
        for member in pods[start : start + GANG_SIZE]:
            member["metadata"]["annotations"] = {
                "gang.scheduling.koordinator.sh/name": f"gang-{start:05d}",
                "gang.scheduling.koordinator.sh/min-available": str(GANG_SIZE),
            }
    owners = [p for p in pods if "annotations" not in p["metadata"]][:RESERVATIONS]
    for i, owner in enumerate(owners):
        requests = owner["spec"]["containers"][0]["resources"]["requests"]
        objects.append(
            {
                "apiVersion": "scheduling.koordinator.sh/v1alpha1",
                "kind": "Reservation",
                "metadata": {"name": f"reserve-{i:03d}", "uid": f"uid-{i:03d}"},
                "spec": {
                    "owners": [{"object": {"name": owner["metadata"]["name"], "namespace": "bench"}}],
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}},
                },
                "status": {"phase": "Available", "nodeName": f"node-{rng.randrange(nodes):05d}"},
            }
        )
    return objects


def cluster(nodes: int, pods: int = 0, seed: int = 1, extras: bool = False) -> ClusterState:
    rng = random.Random(seed)
    objects = [node(i) for i in range(nodes)] + [metric(i, rng) for i in range(nodes)] + [pod(i) for i in range(pods)]
    if extras:
        objects = with_gangs_and_reservations(objects, nodes, rng)
    return ClusterState.from_objects(objects)


def bench_simulate(nodes: int, pods: int, extras: bool = False) -> tuple[float, float, str]:
    """(pods per wall second, pods per CPU second, what was placed)."""
    state = cluster(nodes, pods, extras=extras)
    config = load_config(None, in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), state, fixed_clock(parse_time(NOW)))
    gc.collect()
    gc.freeze()  # as `colocate scheduler simulate` does after loading the snapshot
    report = simulate(Scheduler(fwk, state, config.percentage_of_nodes_to_score), state)
    gc.unfreeze()
    scheduled = sum(1 for p in report.placements if p.scheduled)
    consumed = sum(1 for p in report.placements if p.reservation)
    placed = f"scheduled={scheduled:5d}" + (f" reservations consumed={consumed}" if extras else "")
    return len(report.placements) / report.seconds, len(report.placements) / report.cpu_seconds, placed


def spread(values: list[float], fmt: str = "{:8.1f}") -> str:
    """The median, and the range when there is more than one value."""
    median = fmt.format(statistics.median(values))
    if len(values) == 1:
        return median
    return f"{median} [{fmt.format(min(values)).strip()}..{fmt.format(max(values)).strip()}]"


def report_simulate(nodes: int, pods: int, runs: int, extras: bool = False) -> None:
    results = [bench_simulate(nodes, pods, extras) for _ in range(runs)]
    label = "+gangs+reservations" if extras else ""
    print(
        f"simulate{label}  nodes={nodes:5d} pods={pods:5d} {results[-1][2]} "
        f"pods/s={spread([r[0] for r in results])} pods/CPU-s={spread([r[1] for r in results])}"
    )


async def bench_extender(nodes: int, rounds: int) -> tuple[float, float, float, int]:
    """(p50 ms, p99 ms, CPU ms per round trip, feasible nodes of the last round)."""
    state = cluster(nodes)
    config = load_config(None, in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), state, fixed_clock(parse_time(NOW)))
    names = [f"node-{i:05d}" for i in range(nodes)]
    timings = []
    service = ExtenderService(fwk, state)
    gc.collect()
    gc.freeze()  # as `colocate scheduler extender` does after loading the snapshot and building the service
    cpu = 0.0
    async with TestClient(TestServer(make_app(service), host="127.0.0.1")) as client:
        for i in range(rounds + 5):
            cpu_started = time.process_time()
            started = time.perf_counter()
            body = orjson.dumps({"Pod": pod(i), "NodeNames": names})
            resp = await client.post("/scheduler/filter", data=body)
            result = orjson.loads(await resp.read())
            body = orjson.dumps({"Pod": pod(i), "NodeNames": result["NodeNames"]})
            resp = await client.post("/scheduler/prioritize", data=body)
            orjson.loads(await resp.read())
            if i >= 5:  # warm-up rounds are not counted
                timings.append((time.perf_counter() - started) * 1000)
                cpu += time.process_time() - cpu_started
    gc.unfreeze()
    timings.sort()
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    return statistics.median(timings), p99, cpu * 1000 / rounds, len(result["NodeNames"])


def report_extender(nodes: int, rounds: int, runs: int) -> None:
    results = [asyncio.run(bench_extender(nodes, rounds)) for _ in range(runs)]
    fmt = "{:6.2f}"
    print(
        f"extender  nodes={nodes:5d} rounds={rounds:4d} filter+prioritize "
        f"p50={spread([r[0] for r in results], fmt)} ms p99={spread([r[1] for r in results], fmt)} ms "
        f"CPU={spread([r[2] for r in results], fmt)} ms/round (feasible {results[-1][3]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer pods and rounds")
    parser.add_argument("--runs", type=int, default=1, help="repeat each measurement, print median and range")
    args = parser.parse_args()
    pods = 500 if args.quick else 2000
    for nodes in (1000, 5000):
        report_simulate(nodes, pods, args.runs)
    report_simulate(1000, pods, args.runs, extras=True)
    for nodes, rounds in ((500, 50 if args.quick else 200), (5000, 20 if args.quick else 100)):
        report_extender(nodes, rounds, args.runs)


if __name__ == "__main__":
    main()

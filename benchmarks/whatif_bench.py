"""`colocate whatif` benchmark (a script that prints numbers, not a test).

    python -m benchmarks.whatif_bench [--nodes 1000] [--duration 24h] [--step 1m] [--arrivals 20000]
                                      [--profile N] [--phases] [--compiled]

Issue 30's goal: 1,000 nodes, 24 hours at 1-minute steps, 20,000 pod arrivals in under 60 s on one
core. The cluster is the example's shape at scale (examples/whatif): 32-core nodes, each with two
latency-sensitive web pods whose usage peaks at noon, a NodeMetric, colocation on with a CFS-quota
suppression threshold of 65 %; Spark executors (BE through the example's profile) arrive every
5 minutes, `--arrivals` in all, each running 30 minutes. The snapshot is written to a temporary
directory and read as `--cluster` is. CPU seconds of the process, each apart: reading the
snapshot; the run to its summary (what `-o table` and `--report` need: compact records,
colocate/whatif/records.py); and the JSON document `-o json` writes, built and encoded a step at a
time as the command does (the building of the rows alone is timed too). `--profile N` prints the N
functions with the most own time in the run (cProfile), and the same grouped by component.
`--compiled` runs it as `pip install .` and the image run colocate: in a copy of the tree with
`colocate/cluster/compiled.py`'s modules compiled by mypyc (`devtools.compiled_copy`, built first, a few
minutes; or build one with `python -m devtools.compiled_copy DIR` and run this script from DIR).
cProfile does not see inside compiled functions: their time is their caller's. `--phases` prints
the CPU of each phase of a step (the manager's round, the koordlet's, sampling usage and writing the
NodeMetrics, the scheduler's pass, ...) in µs per node and step, each timed by wrapping it: plain
modules only (a compiled class's methods cannot be wrapped).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colocate.cluster.compiled import WHATIF, compiled_modules, describe  # noqa: E402
from colocate.whatif.cli import run_timeline  # noqa: E402
from colocate.whatif.inputs import Inputs, load_inputs, load_profiles, start_time  # noqa: E402
from colocate.whatif.loop import Run, RunOptions  # noqa: E402
from colocate.whatif.records import json_chunks, step_document  # noqa: E402
from policies.apis.durations import parse_duration  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "whatif"


def write_cluster(root: Path, nodes: int) -> None:
    cluster = root / "cluster"
    cluster.mkdir()
    for name in ("namespaces.yaml", "priorityclasses.yaml", "slo-controller-config.yaml"):
        (cluster / name).write_text((EXAMPLE / "cluster" / name).read_text())
    objects = []
    for i in range(nodes):
        node = f"node-{i:04d}"
        resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node},
                "status": {"capacity": resources, "allocatable": resources},
            }
        )
        objects.append(
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": node},
                "status": {
                    "updateTime": "2026-01-01T00:00:00Z",
                    "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1", "memory": "4Gi"}}},
                },
            }
        )
        for j in range(2):
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"web-{i:04d}-{j}",
                        "namespace": "web",
                        "uid": f"web-{i}-{j}",
                        "labels": {"app": "web", "koordinator.sh/qosClass": "LS"},
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "ReplicaSet",
                                "name": "web",
                                "uid": "rs",
                                "controller": True,
                            }
                        ],
                    },
                    "spec": {
                        "nodeName": node,
                        "priorityClassName": "koord-prod",
                        "priority": 9000,
                        "containers": [{"name": "web", "resources": {"requests": {"cpu": "12", "memory": "32Gi"}}}],
                    },
                    "status": {"phase": "Running"},
                }
            )
    (cluster / "objects.yaml").write_text(yaml.safe_dump_all(objects))


def write_workload(root: Path, arrivals: int, duration: float) -> Path:
    times = max(int(duration // 300), 1)
    workload = {
        "apiVersion": "colocate.io/v1alpha1",
        "kind": "Workload",
        "spec": {
            "running": [
                {
                    "selector": {"matchLabels": {"app": "web"}},
                    "usage": {
                        "cpu": {"daily": {"min": "2", "max": "9", "peakAt": "12:00"}},
                        "memory": {"constant": "24Gi"},
                    },
                }
            ],
            "arrivals": [
                {
                    "name": "spark",
                    "at": "0s",
                    "every": "5m",
                    "count": -(-arrivals // times),
                    "lifetime": "30m",
                    "template": {
                        "metadata": {"namespace": "batch", "labels": {"koordinator.sh/enable-colocation": "true"}},
                        "spec": {
                            "containers": [
                                {"name": "executor", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
                            ]
                        },
                    },
                    "usage": {"cpu": {"constant": "1500m", "noise": 10}, "memory": {"constant": "1536Mi"}},
                }
            ],
        },
    }
    path = root / "workload.yaml"
    path.write_text(yaml.safe_dump(workload))
    return path


COMPONENTS = (
    ("admission (webhook chain)", ("/webhook/", "/policies/pod_mutation", "/policies/profile")),
    ("manager", ("/scheduler_plugins/manager/", "/policies/noderesource/", "/policies/slo_config/")),
    ("scheduler", ("/scheduler_plugins/scheduler/",)),
    ("koordlet", ("/scheduler_plugins/koordlet/",)),
    ("descheduler", ("/scheduler_plugins/descheduler/",)),
    ("store and views", ("/cluster/",)),
    ("whatif loop (usage, metrics, records)", ("/colocate/whatif/",)),
)


def by_component(stats: pstats.Stats) -> list[tuple[str, float]]:
    totals: dict[str, float] = {}
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        name = next(
            (label for label, parts in COMPONENTS if any(p in filename for p in parts)),
            "other (stdlib, quantities, yaml)",
        )
        totals[name] = totals.get(name, 0.0) + own
    return sorted(totals.items(), key=lambda item: -item[1])


#: what `--phases` times: (label, path of the bound method from the Run, or `module:function`);
#: indented ones are also inside the figure above them, "objects handed on" inside several
PHASES = (
    ("manager's round", "manager.round"),
    ("koordlet's rounds", "_koordlet"),
    ("sampling usage, NodeMetrics written", "sampler.sample"),
    ("  of which the in-step CPUSuppress", "sampler._suppress"),
    ("scheduler's pass", "scheduler.step"),
    ("descheduler", "descheduler.step"),
    ("step records", "_nodes"),
    ("arrivals admitted", "_arrive"),
    ("pods finished", "_finish"),
    # what the components hand each other, across the phases above
    ("objects handed on: NodeMetrics rendered", "colocate.whatif.usage:render_node_metric"),
    ("objects handed on: store writes, all kinds", "store.put"),
)


def timed_phases(run: Run) -> dict[str, float]:
    """Wrap each of `PHASES`' methods on `run` to add up its CPU seconds in the returned dict."""
    spent: dict[str, float] = {}
    for label, path in PHASES:
        module, colon, path = path.rpartition(":")
        *owners, name = path.split(".")
        owner: Any = importlib.import_module(module) if colon else run
        for attribute in owners:
            owner = getattr(owner, attribute)
        method = getattr(owner, name)

        def wrapper(*args: Any, _method: Any = method, _label: str = label, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return _method(*args, **kwargs)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.process_time() - started

        setattr(owner, name, wrapper)
    return spent


def print_phases(inputs: Inputs, profiles: list[Any], options: RunOptions, nodes: int) -> None:
    run = Run(inputs, profiles, options)
    spent = timed_phases(run)
    started = time.process_time()
    steps = len(run.run())
    total = time.process_time() - started
    per = 1e6 / max(steps * nodes, 1)
    print(f"per node and step (plain modules, each phase wrapped): {total * per:.0f} µs in all")
    for label, _ in PHASES:
        print(f"  {label:44s} {spent.get(label, 0.0) * per:6.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--duration", default="24h")
    parser.add_argument("--step", default="1m")
    parser.add_argument("--arrivals", type=int, default=20000)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--phases", action="store_true", help="CPU per phase of a step, per node (plain modules)")
    parser.add_argument(
        "--node-timelines", action="store_true", help="also measure -o json --node-timelines (every node's rows)"
    )
    parser.add_argument("--compiled", action="store_true", help="run in a compiled copy of the tree (mypyc)")
    args = parser.parse_args()
    if args.phases and (args.compiled or args.profile):
        parser.error("--phases wraps the plain modules' methods: not with --compiled or --profile")
    if args.phases and compiled_modules(WHATIF):
        parser.error("--phases needs the plain modules: run it from a checkout, not a compiled copy")
    if args.compiled:
        from devtools.compiled_copy import compiled_copy

        with tempfile.TemporaryDirectory(prefix="colocate-whatif-") as tmp:
            tree = compiled_copy(Path(tmp) / "compiled")
            argv = [arg for arg in sys.argv[1:] if arg != "--compiled"]
            sys.exit(subprocess.run([sys.executable, "-m", "benchmarks.whatif_bench", *argv], cwd=tree).returncode)
    duration = parse_duration(args.duration)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_cluster(root, args.nodes)
        workload = write_workload(root, args.arrivals, duration)
        started = time.process_time()
        inputs = load_inputs(root / "cluster", workload)
        profiles = load_profiles(EXAMPLE / "profiles", "--profiles")
        read = time.process_time() - started
    options = RunOptions(start_time(inputs, None), duration, parse_duration(args.step), seed=0)
    if args.phases:
        print_phases(inputs, profiles, options, args.nodes)
        return
    profiler = cProfile.Profile() if args.profile else None
    started = time.process_time()
    if profiler:
        profiler.enable()
    result = run_timeline(inputs, profiles, options)
    if profiler:
        profiler.disable()
    ran = time.process_time() - started
    started = time.process_time()
    size = sum(len(chunk) for chunk in json_chunks({"run": result}))
    dumped = time.process_time() - started
    timelines_size = built = timelines_dumped = 0.0
    if args.node_timelines:
        started = time.process_time()
        for step in result.steps:
            step_document(step, result.nodes)
        built = time.process_time() - started
        started = time.process_time()
        timelines_size = sum(len(chunk) for chunk in json_chunks({"run": result}, timelines=True))
        timelines_dumped = time.process_time() - started
    steps = len(result.steps)
    print(f"nodes {args.nodes}, steps {steps}, arrivals admitted {result.summary['admitted']}")
    print(f"modules compiled with mypyc: {describe()}")
    print(f"read the snapshot: {read:.1f} s CPU")
    print(f"run: {ran:.1f} s CPU ({1000 * ran / max(steps, 1):.1f} ms per step), to the summary")
    print(f"JSON document (-o json): {dumped:.1f} s CPU, {size / 1e6:.1f} MB")
    if args.node_timelines:
        print(
            f"with --node-timelines: {timelines_dumped:.1f} s CPU, {timelines_size / 1e6:.0f} MB; "
            f"of which building the rows {built:.1f} s"
        )
    print(f"summary: {json.dumps(result.summary, sort_keys=True)}")
    if profiler:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        print("\nown time by component (profiled):")
        total = sum(t for _, t in by_component(stats)) or 1.0
        for name, seconds in by_component(stats):
            print(f"  {name:45s} {seconds:7.1f} s  {100 * seconds / total:5.1f} %")
        stats.sort_stats("tottime").print_stats(args.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()

"""The run's document: the steps and their summary (utilisation, evictions per hour, pending time,
the SLO signals), and the table people read (`-o table`: the summary and one line per hour)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cli.output import table_lines
from policies.quantity import scalar_of

from .pods import CLASSES


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def step_utilisation(step: dict[str, Any], allocatable: dict[str, tuple[int, int]]) -> tuple[float, float]:
    """Used cpu and memory of every class over the nodes' allocatable."""
    cpu = memory = 0
    for node in step["nodes"]:
        for cls in CLASSES:
            cpu += scalar_of("cpu", node["used"][cls]["cpu"])
            memory += scalar_of("memory", node["used"][cls]["memory"])
    total_cpu = sum(a[0] for a in allocatable.values()) or 1
    total_memory = sum(a[1] for a in allocatable.values()) or 1
    return cpu / total_cpu, memory / total_memory


def summarise(
    steps: list[dict[str, Any]],
    allocatable: dict[str, tuple[int, int]],
    step_seconds: float,
    pending_seconds: Sequence[float],
    totals: dict[str, int],
) -> dict[str, Any]:
    cpu, memory = zip(*(step_utilisation(s, allocatable) for s in steps), strict=True) if steps else ((), ())
    hours = len(steps) * step_seconds / 3600 or 1.0
    evictions = sum(len(s["evictions"]) for s in steps)
    over = sum(1 for s in steps for n in s["nodes"] if n["lsOverThreshold"])
    starved = sum(n["beStarvedPods"] for s in steps for n in s["nodes"])
    return {
        "cpuUtilisation": {"mean": round(sum(cpu) / max(len(cpu), 1), 4), "p95": round(_percentile(cpu, 0.95), 4)},
        "memoryUtilisation": {
            "mean": round(sum(memory) / max(len(memory), 1), 4),
            "p95": round(_percentile(memory, 0.95), 4),
        },
        "evictionsPerHour": round(evictions / hours, 3),
        "pendingSeconds": {"p50": _percentile(pending_seconds, 0.5), "p95": _percentile(pending_seconds, 0.95)},
        "lsOverThresholdNodeMinutes": round(over * step_seconds / 60, 3),
        "beStarvedPodMinutes": round(starved * step_seconds / 60, 3),
        "utilisationGained": {
            "cpu": round(sum(cpu) / max(len(cpu), 1) - (cpu[0] if cpu else 0.0), 4),
            "memory": round(sum(memory) / max(len(memory), 1) - (memory[0] if memory else 0.0), 4),
        },
        **totals,
    }


def gained(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Utilisation gained by b over a (the mean, in points of allocatable)."""
    return {
        "cpu": round(b["cpuUtilisation"]["mean"] - a["cpuUtilisation"]["mean"], 4),
        "memory": round(b["memoryUtilisation"]["mean"] - a["memoryUtilisation"]["mean"], 4),
    }


def run_table(run: dict[str, Any], title: str = "") -> list[str]:
    summary = run["summary"]
    lines = [title] if title else []
    lines += [
        f"cpu utilisation: mean {summary['cpuUtilisation']['mean']:.1%}, p95 {summary['cpuUtilisation']['p95']:.1%}",
        f"memory utilisation: mean {summary['memoryUtilisation']['mean']:.1%}, "
        f"p95 {summary['memoryUtilisation']['p95']:.1%}",
        f"evictions per hour: {summary['evictionsPerHour']}",
        f"pending seconds: p50 {summary['pendingSeconds']['p50']:g}, p95 {summary['pendingSeconds']['p95']:g}",
        f"LS over threshold: {summary['lsOverThresholdNodeMinutes']} node-minutes; "
        f"BE starved: {summary['beStarvedPodMinutes']} pod-minutes",
        f"admitted {summary['admitted']}, denied {summary['denied']}, recreated {summary['recreated']}",
        "",
    ]
    rows = []
    hour: str | None = None
    for step in run["steps"]:
        if step["t"][:13] == hour:
            continue
        hour = step["t"][:13]
        nodes = step["nodes"]
        rows.append(
            (
                step["t"],
                str(step["pending"]),
                str(sum(1 for n in nodes if n["lsOverThreshold"])),
                str(sum(n["suppressedMilliCPU"] for n in nodes)),
                str(len(step["evictions"])),
            )
        )
    lines += table_lines(("TIME", "PENDING", "LS-OVER-NODES", "SUPPRESSED-MILLICPU", "EVICTIONS"), rows)
    return lines


def document_table(document: dict[str, Any]) -> str:
    if "a" in document:
        lines = run_table(document["a"], "run a") + [""] + run_table(document["b"], "run b")
        gain = document["b"]["summary"].get("gainedOverA")
        if gain:
            lines += ["", f"utilisation gained by b over a: cpu {gain['cpu']:+.1%}, memory {gain['memory']:+.1%}"]
        return "\n".join(lines)
    return "\n".join(run_table(document))

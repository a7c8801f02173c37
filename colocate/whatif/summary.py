"""The run's summary (utilisation, evictions per hour, pending time, the SLO signals) and the table
people read (`-o table`: the summary and one line per hour), both from the compact step records
(`records.py`): neither needs the JSON rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from colocate.cli.output import table_lines

from .pods import CLASSES
from .records import LS_OVER, STARVED, SUPPRESSED, USED, RunResult, StepRecord


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def step_utilisation(step: StepRecord, allocatable: dict[str, tuple[int, int]]) -> tuple[float, float]:
    """Used cpu and memory of every class over the nodes' allocatable."""
    cpu = sum(sum(step.column(USED + 2 * i)) for i in range(len(CLASSES)))
    memory = sum(sum(step.column(USED + 2 * i + 1)) for i in range(len(CLASSES)))
    total_cpu = sum(a[0] for a in allocatable.values()) or 1
    total_memory = sum(a[1] for a in allocatable.values()) or 1
    return cpu / total_cpu, memory / total_memory


def summarise(
    steps: Sequence[StepRecord],
    allocatable: dict[str, tuple[int, int]],
    step_seconds: float,
    pending_seconds: Sequence[float],
    totals: dict[str, int],
) -> dict[str, Any]:
    cpu, memory = zip(*(step_utilisation(s, allocatable) for s in steps), strict=True) if steps else ((), ())
    hours = len(steps) * step_seconds / 3600 or 1.0
    evictions = sum(len(s.evictions) for s in steps)
    over = sum(sum(s.column(LS_OVER)) for s in steps)
    starved = sum(sum(s.column(STARVED)) for s in steps)
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


def run_table(run: RunResult, title: str = "") -> list[str]:
    summary = run.summary
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
    for step in run.steps:
        if step.t[:13] == hour:
            continue
        hour = step.t[:13]
        rows.append(
            (
                step.t,
                str(step.pending),
                str(sum(step.column(LS_OVER))),
                str(sum(step.column(SUPPRESSED))),
                str(len(step.evictions)),
            )
        )
    lines += table_lines(("TIME", "PENDING", "LS-OVER-NODES", "BE-ALLOWED-MILLICPU", "EVICTIONS"), rows)
    return lines


def document_table(runs: Mapping[str, RunResult]) -> str:
    """The table of one run (`{"run": ..}`) or of a comparison (`{"a": .., "b": ..}`)."""
    if "a" in runs:
        lines = run_table(runs["a"], "run a") + [""] + run_table(runs["b"], "run b")
        gain = runs["b"].summary.get("gainedOverA")
        if gain:
            lines += ["", f"utilisation gained by b over a: cpu {gain['cpu']:+.1%}, memory {gain['memory']:+.1%}"]
        return "\n".join(lines)
    return "\n".join(run_table(runs["run"]))

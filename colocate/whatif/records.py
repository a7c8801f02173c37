"""A run's records: compact while it runs, the `-o json` rows only when they are asked for.

At the issue's size (1,000 nodes, 1,440 steps) the per-node rows of the JSON document are 1.44
million dicts, about 600 MB of text: a run keeps, per step, one array of integers with a fixed
slot for each number of each node's row, and the step's own few facts (pending, evictions, ...).
The summary, `-o table` and the report's plots read the arrays; `step_document` builds a step's
JSON (docs/whatif.md, "Output") from them, and `json_chunks` writes the document a step at a time.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from policies.apis.nodemetric import cpu_text, memory_text
from policies.apis.quantity import QuantityError, milli_value

from .pods import CLASSES

#: a node's slots in a step's array: requested then used (cpu, memory) per class in CLASSES order,
#: the batch allocatable the manager wrote (cpu, memory), suppressed millicores, LS over its
#: threshold (0/1), BE pods starved
REQUESTED: Final = 0
USED: Final = 2 * len(CLASSES)
BATCH_CPU: Final = 4 * len(CLASSES)
BATCH_MEMORY: Final = BATCH_CPU + 1
SUPPRESSED: Final = BATCH_MEMORY + 1
LS_OVER: Final = SUPPRESSED + 1
STARVED: Final = LS_OVER + 1
FIELDS: Final = STARVED + 1
#: a batch allocatable slot: absent from the node, or a value not written as a plain integer (kept
#: as it was, in `StepRecord.raw`)
ABSENT: Final = -1
RAW: Final = -2
BATCH_RESOURCES: Final = ((BATCH_CPU, "kubernetes.io/batch-cpu"), (BATCH_MEMORY, "kubernetes.io/batch-memory"))


def allocatable_slot(value: Any) -> int:
    """The slot of a batch allocatable value: the integer its text spells when that text is exactly
    the integer's (the manager writes them so), else RAW."""
    if type(value) is str and value.isdigit():
        number = int(value)
        if str(number) == value:
            return number
    return RAW


@dataclass
class StepRecord:
    """One step: the node slots (FIELDS per node, in the run's node order) and the step's facts."""

    t: str
    nodes: array[int]
    pending: int
    pending_reasons: dict[str, int]
    admitted: int
    denied: int
    placed: int
    evictions: list[dict[str, Any]]
    migrations: list[dict[str, Any]]
    denials: list[dict[str, str]]
    #: batch allocatable values not written as plain integers, by (node index, slot)
    raw: dict[tuple[int, int], Any] = field(default_factory=dict)

    def column(self, slot: int) -> array[int]:
        """One slot of every node."""
        return self.nodes[slot::FIELDS]

    def used_cpu(self, node: int) -> int:
        """The cpu the node's pods used (millicores, every class)."""
        base = node * FIELDS + USED
        return sum(self.nodes[base : base + 2 * len(CLASSES) : 2])


@dataclass
class RunResult:
    """One timeline: its nodes, one record per step and the summary."""

    nodes: tuple[str, ...]
    steps: list[StepRecord]
    summary: dict[str, Any]
    #: what the report names and draws: the run's title (its profiles folder), the nodes' cpu
    #: capacity and the cpu above which LS pods are over their nodes' suppress threshold (cores, summed)
    title: str = ""
    cpu_capacity: float = 0.0
    ls_threshold: float = 0.0
    #: per node: allocatable cpu (millicores) and memory (bytes), for the per-node utilisation
    allocatable: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: the step's length in seconds (node-minutes in the per-node aggregates)
    step_seconds: float = 60.0


def _pair(values: Sequence[int], at: int) -> dict[str, str]:
    return {"cpu": cpu_text(values[at]), "memory": memory_text(values[at + 1])}


def _raw_amount(value: Any) -> int | None:
    """A batch allocatable written other than as a plain integer, as a number (None: not one)."""
    try:
        return milli_value(value) // 1000
    except (QuantityError, TypeError, ValueError):
        return None


def _batch_column(step: StepRecord, slot: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """One batch allocatable slot of every node as numbers (ABSENT where the node has none)."""
    column = np.array(np.frombuffer(step.nodes, dtype=np.int64)[slot::FIELDS])
    for (index, raw_slot), value in step.raw.items():
        if raw_slot == slot:
            amount = _raw_amount(value)
            column[index] = ABSENT if amount is None else amount
    return column


def step_totals(step: StepRecord) -> dict[str, Any]:
    """The cluster's totals of the step's node rows (what `-o json` writes by default)."""
    values = step.nodes
    sums = [sum(values[slot::FIELDS]) for slot in range(REQUESTED, BATCH_CPU)]
    batch = {}
    for slot, resource in BATCH_RESOURCES:
        column = _batch_column(step, slot)
        present = column >= 0
        if present.any():
            batch[resource] = str(int(column[present].sum()))
    return {
        "requested": {c: _pair(sums, REQUESTED + 2 * i) for i, c in enumerate(CLASSES)},
        "used": {c: _pair(sums, USED + 2 * i) for i, c in enumerate(CLASSES)},
        "batchAllocatable": batch,
        "suppressedMilliCPU": sum(values[SUPPRESSED::FIELDS]),
        "lsOverThresholdNodes": sum(values[LS_OVER::FIELDS]),
        "beStarvedPods": sum(values[STARVED::FIELDS]),
    }


def step_document(step: StepRecord, nodes: Sequence[str], timelines: bool = True) -> dict[str, Any]:
    """The step as `-o json` has it: the cluster's totals, and each node's row with `timelines`."""
    document = _step_facts(step)
    if timelines:
        document["nodes"] = _node_rows(step, nodes)
    return document


def _node_rows(step: StepRecord, nodes: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    values = step.nodes
    for index, name in enumerate(nodes):
        base = index * FIELDS
        row = values[base : base + FIELDS]
        batch: dict[str, Any] = {}
        for slot, resource in BATCH_RESOURCES:
            if row[slot] == RAW:
                batch[resource] = step.raw[(index, slot)]
            elif row[slot] != ABSENT:
                batch[resource] = str(row[slot])
        rows.append(
            {
                "name": name,
                "requested": {c: _pair(row, REQUESTED + 2 * i) for i, c in enumerate(CLASSES)},
                "used": {c: _pair(row, USED + 2 * i) for i, c in enumerate(CLASSES)},
                "batchAllocatable": batch,
                "suppressedMilliCPU": row[SUPPRESSED],
                "lsOverThreshold": bool(row[LS_OVER]),
                "beStarvedPods": row[STARVED],
            }
        )
    return rows


def _step_facts(step: StepRecord) -> dict[str, Any]:
    document: dict[str, Any] = {
        "t": step.t,
        "totals": step_totals(step),
        "pending": step.pending,
        "pendingReasons": step.pending_reasons,
        "admitted": step.admitted,
        "denied": step.denied,
        "placed": step.placed,
        "evictions": step.evictions,
        "migrations": step.migrations,
    }
    if step.denials:
        document["denials"] = step.denials
    return document


def document_of(result: RunResult, timelines: bool = True) -> dict[str, Any]:
    """The whole run as `-o json` has it (every step at once: `json_chunks` writes the same text a
    step at a time)."""
    return {
        "nodes": node_aggregates(result),
        "steps": [step_document(s, result.nodes, timelines) for s in result.steps],
        "summary": result.summary,
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _run_chunks(result: RunResult, timelines: bool) -> Iterator[str]:
    yield '{"nodes":' + _dumps(node_aggregates(result)) + ',"steps":['
    for index, step in enumerate(result.steps):
        yield ("," if index else "") + _dumps(step_document(step, result.nodes, timelines))
    yield '],"summary":' + _dumps(result.summary) + "}"


def json_chunks(runs: Mapping[str, RunResult], timelines: bool = False) -> Iterator[str]:
    """The `-o json` text of one run (`{"run": result}`) or of a comparison (`{"a": .., "b": ..}`),
    in pieces: exactly `json.dumps(document, sort_keys=True, separators=(",", ":"))`. Each node's
    row of every step only with `timelines` (`--node-timelines`: 600 MB for a 1,000-node day)."""
    if list(runs) == ["run"]:
        yield from _run_chunks(runs["run"], timelines)
        return
    for index, label in enumerate(sorted(runs)):
        yield ("{" if index == 0 else ",") + _dumps(label) + ":"
        yield from _run_chunks(runs[label], timelines)
    yield "}"


def _slot_matrix(steps: Sequence[StepRecord], slot: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """One slot of every node over the steps: steps x nodes."""
    return np.stack([np.frombuffer(s.nodes, dtype=np.int64)[slot::FIELDS] for s in steps])


def _used_matrix(steps: Sequence[StepRecord], resource: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """What every class used of cpu (0) or memory (1) on every node: steps x nodes."""
    total = _slot_matrix(steps, USED + resource)
    for i in range(1, len(CLASSES)):
        total = total + _slot_matrix(steps, USED + 2 * i + resource)
    return total


def _mean_p95(values: np.ndarray[Any, np.dtype[Any]]) -> dict[str, float]:
    """A node's mean and p95 over the steps (the summary's percentile: the ceil(0.95·n)-th value)."""
    column = np.sort(values)
    p95 = column[min(len(column) - 1, max(0, math.ceil(0.95 * len(column)) - 1))]
    return {"mean": round(float(column.mean()), 4), "p95": round(float(p95), 4)}


def node_aggregates(result: RunResult) -> list[dict[str, Any]]:
    """Per node over the run: cpu and memory utilisation (used ÷ allocatable, mean and p95), the
    mean requested and used by class, the mean batch allocatable the manager wrote, the mean and
    largest CPUSuppress, node-minutes over threshold, BE pod-minutes starved and evictions."""
    steps, nodes = result.steps, result.nodes
    if not steps or not nodes:
        return []
    minutes = result.step_seconds / 60
    means = {slot: _slot_matrix(steps, slot).mean(axis=0) for slot in range(REQUESTED, BATCH_CPU)}
    used = [_used_matrix(steps, resource) for resource in (0, 1)]
    suppressed = _slot_matrix(steps, SUPPRESSED)
    over = _slot_matrix(steps, LS_OVER).sum(axis=0)
    starved = _slot_matrix(steps, STARVED).sum(axis=0)
    batch = [_batch_means(steps, slot) for slot, _ in BATCH_RESOURCES]
    evictions: dict[str, int] = {}
    for step in steps:
        for eviction in step.evictions:
            evictions[eviction.get("node", "")] = evictions.get(eviction.get("node", ""), 0) + 1
    rows = []
    for index, name in enumerate(nodes):
        cpu, memory = result.allocatable.get(name, (0, 0))
        row_means = [int(round(float(means[slot][index]))) for slot in range(REQUESTED, BATCH_CPU)]
        rows.append(
            {
                "name": name,
                "cpuUtilisation": _mean_p95(used[0][:, index] / (cpu or 1)),
                "memoryUtilisation": _mean_p95(used[1][:, index] / (memory or 1)),
                "requestedMean": {c: _pair(row_means, REQUESTED + 2 * i) for i, c in enumerate(CLASSES)},
                "usedMean": {c: _pair(row_means, USED + 2 * i) for i, c in enumerate(CLASSES)},
                "batchAllocatableMean": {
                    resource: str(b[index])
                    for (_, resource), b in zip(BATCH_RESOURCES, batch, strict=True)
                    if b[index] is not None
                },
                "suppressedMilliCPU": {
                    "mean": int(round(float(suppressed[:, index].mean()))),
                    "max": int(suppressed[:, index].max()),
                },
                "lsOverThresholdMinutes": round(float(over[index]) * minutes, 3),
                "beStarvedPodMinutes": round(float(starved[index]) * minutes, 3),
                "evictions": evictions.get(name, 0),
            }
        )
    return rows


def _batch_means(steps: Sequence[StepRecord], slot: int) -> list[int | None]:
    """Each node's mean batch allocatable of one resource over the steps it had one (None: never)."""
    matrix = np.stack([_batch_column(step, slot) for step in steps])
    present = matrix >= 0
    totals = np.where(present, matrix, 0).sum(axis=0)
    counts = present.sum(axis=0)
    return [int(t) // int(c) if c else None for t, c in zip(totals, counts, strict=True)]

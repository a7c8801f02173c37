"""A run's records: compact while it runs, the `-o json` rows only when they are asked for.

At the issue's size (1,000 nodes, 1,440 steps) the per-node rows of the JSON document are 1.44
million dicts, about 600 MB of text: a run keeps, per step, one array of integers with a fixed
slot for each number of each node's row, and the step's own few facts (pending, evictions, ...).
The summary, `-o table` and the report's plots read the arrays; `step_document` builds a step's
JSON (docs/whatif.md, "Output") from them, and `json_chunks` writes the document a step at a time.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.nodemetric import cpu_text, memory_text

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


def _pair(values: Sequence[int], at: int) -> dict[str, str]:
    return {"cpu": cpu_text(values[at]), "memory": memory_text(values[at + 1])}


def step_document(step: StepRecord, nodes: Sequence[str]) -> dict[str, Any]:
    """The step as `-o json` has it."""
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
    document: dict[str, Any] = {
        "t": step.t,
        "nodes": rows,
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


def document_of(result: RunResult) -> dict[str, Any]:
    """The whole run as `-o json` has it (every step's rows at once: `json_chunks` writes the same
    text a step at a time)."""
    return {"steps": [step_document(s, result.nodes) for s in result.steps], "summary": result.summary}


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _run_chunks(result: RunResult) -> Iterator[str]:
    yield '{"steps":['
    for index, step in enumerate(result.steps):
        yield ("," if index else "") + _dumps(step_document(step, result.nodes))
    yield '],"summary":' + _dumps(result.summary) + "}"


def json_chunks(runs: Mapping[str, RunResult]) -> Iterator[str]:
    """The `-o json` text of one run (`{"run": result}`) or of a comparison (`{"a": .., "b": ..}`),
    in pieces: exactly `json.dumps(document, sort_keys=True, separators=(",", ":"))`."""
    if list(runs) == ["run"]:
        yield from _run_chunks(runs["run"])
        return
    for index, label in enumerate(sorted(runs)):
        yield ("{" if index == 0 else ",") + _dumps(label) + ":"
        yield from _run_chunks(runs[label])
    yield "}"

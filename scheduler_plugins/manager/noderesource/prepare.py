"""What lands on the Node (`plugins/util/util.go` PrepareNodeForResource, `batchresource` Prepare,
`cpunormalization` Prepare): the calculated batch and mid resources in `status.capacity` and
`status.allocatable` (removed on reset or degrade, never written as 0 for that), the
`originExtendedAllocatable` annotation, third-party batch allocations subtracted, and the CPU
normalization ratio annotation.

Quantity text follows Koordinator's units: batch-cpu and mid-cpu are milli-cores written as a plain
integer, memory is bytes in the format of the node's memory capacity (batch) or binary (mid).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_AMPLIFICATION_RATIO,
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE,
    ANNOTATION_THIRD_PARTY_ALLOCATIONS,
    BATCH_CPU,
    BATCH_MEMORY,
    MID_CPU,
    MID_MEMORY,
    PriorityClass,
)
from policies.apis.quantity import NANO, Quantity, QuantityError, QuantityFormat, canonical_text
from scheduler_plugins.manager.noderesource.inputs import Res, ceil_div, lenient_milli, multiply_milli, value_of

BATCH_RESOURCES = (BATCH_CPU, BATCH_MEMORY)
MID_RESOURCES = (MID_CPU, MID_MEMORY)


@dataclass(frozen=True, slots=True)
class Calculated:
    """One round's results for a node: None means the resources are reset (removed)."""

    batch: Res | None
    mid: Res | None
    memory_format: QuantityFormat = QuantityFormat.BINARY_SI
    normalization_ratio: str | None = None
    #: the resource-amplification-ratio annotation; None removes it
    amplification_ratio: str | None = None
    zones: Mapping[str, Res] = field(default_factory=dict)
    zone_formats: Mapping[str, QuantityFormat] = field(default_factory=dict)


def memory_text(milli: int, fmt: QuantityFormat) -> str:
    """Memory (milli-bytes) as Kubernetes prints a quantity of that format."""
    return canonical_text(milli * 10**6, fmt)


def cpu_text(milli_cores: int) -> str:
    """batch-cpu / mid-cpu: the milli-core count as a plain integer ("25000")."""
    return str(milli_cores)


def _normalized_cpu(milli_cores: int, ratio: str | None) -> int:
    try:
        factor = float(ratio) if ratio is not None else -1.0
    except ValueError:
        factor = -1.0
    if factor > 1.0:
        return value_of(multiply_milli(milli_cores * 1000, factor))
    return milli_cores


def _third_party_batch(annotations: Mapping[str, str]) -> dict[str, int] | None:
    """Σ resources of the koord-batch allocations (values, not milli); None when absent or unparsable."""
    text = annotations.get(ANNOTATION_THIRD_PARTY_ALLOCATIONS)
    if text is None:
        return None
    try:
        raw = json.loads(text)
        used: dict[str, int] = {}
        for allocation in raw.get("allocations") or []:
            if allocation.get("priority") != PriorityClass.BATCH:
                continue
            for name, amount in (allocation.get("resources") or {}).items():
                used[name] = used.get(name, 0) + Quantity.parse(amount).nanos
    except (ValueError, AttributeError, TypeError, QuantityError):
        return None
    return used


#: `json.dumps(..., separators=(",", ":"))` without building an encoder per call
_COMPACT: Final = json.JSONEncoder(separators=(",", ":"))


#: the annotation's keys when it holds only the batch resources (what the manager itself writes)
_BATCH_ONLY: Final = frozenset(BATCH_RESOURCES)


@lru_cache(maxsize=4096)
def _kept(text: str) -> dict[str, Any] | None:
    """The resources of the `originExtendedAllocatable` annotation's JSON text, None when it holds no
    other than batch-cpu and batch-memory (what the manager itself writes). Cached by text: the
    manager writes it and reads it back every round; read it, never change it."""
    try:
        current = json.loads(text)
        kept = (current.get("resources") or {}) if isinstance(current, dict) else {}
        if not isinstance(kept, dict):
            kept = dict(kept)
    except ValueError:
        kept = {}
    return None if kept.keys() <= _BATCH_ONLY else kept


def _origin(annotations: Mapping[str, str], cpu: str, memory: str) -> str:
    """The annotation with batch-cpu and batch-memory set to these canonical texts."""
    kept = _kept(annotations.get(ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE) or "{}")
    if kept is None:
        # what the encoder below writes for these two keys (sorted), without building it: canonical
        # quantity texts need no JSON escaping
        return f'{{"resources":{{"{BATCH_CPU}":"{cpu}","{BATCH_MEMORY}":"{memory}"}}}}'
    resources = dict(kept)
    resources[BATCH_CPU], resources[BATCH_MEMORY] = cpu, memory
    return _COMPACT.encode({"resources": dict(sorted(resources.items()))})


def prepare_node(node: Mapping[str, Any], calc: Calculated) -> dict[str, Any]:
    """A copy of the node's metadata.annotations and status capacity/allocatable with the results applied.

    Returns {"annotations", "capacity", "allocatable"} (plain dicts; the node is not modified)."""
    return prepare_amounts(
        node, calc.batch, calc.mid, calc.memory_format, calc.normalization_ratio, calc.amplification_ratio
    )[0]


def _memory_milli(text: str, milli: int) -> int:
    """What `text`, formatted from `milli` (whole bytes), says in thousandths: `milli` itself, but for
    an exponent form (a huge amount), which is parsed back as the update rule would."""
    return lenient_milli(text) if "e" in text else milli


def prepare_amounts(
    node: Mapping[str, Any],
    batch: Res | None,
    mid: Res | None,
    memory_format: QuantityFormat,
    normalization_ratio: str | None,
    amplification_ratio: str | None,
) -> tuple[dict[str, Any], dict[str, int], dict[str, str]]:
    """`prepare_node` (its `Calculated` as arguments), the batch and mid resources it leaves in
    `allocatable` in thousandths (what `update.decide_amounts` compares, taken from the integers the
    texts are formatted from rather than parsed back from them), and their texts in the order
    batch-cpu, batch-memory, mid-cpu, mid-memory; absent ones left out of both."""
    status = node.get("status") or {}
    capacity = dict(status.get("capacity") or {})
    allocatable = dict(status.get("allocatable") or {})
    annotations = dict((node.get("metadata") or {}).get("annotations") or {})
    amounts: dict[str, int] = {}
    # set or removed in the order mid-cpu, mid-memory, batch-cpu, batch-memory (the keys' order)
    if mid is not None:
        mid_memory = -(-mid[1] // 1000)  # `ceil_div`, inlined (as below): this runs for every node, every round
        capacity[MID_CPU] = allocatable[MID_CPU] = str(mid[0])  # `cpu_text`
        text = capacity[MID_MEMORY] = allocatable[MID_MEMORY] = canonical_text(
            mid_memory * NANO, QuantityFormat.BINARY_SI
        )
        amounts[MID_CPU] = mid[0] * 1000
        amounts[MID_MEMORY] = _memory_milli(text, mid_memory * 1000)
    else:
        for name in MID_RESOURCES:
            capacity.pop(name, None)
            allocatable.pop(name, None)
    batch_cpu = batch_memory = -1
    # the annotation's texts (canonical, memory in binary form): "0" for a removed resource
    origin_cpu = origin_memory = "0"
    if batch is not None:
        batch_cpu = _normalized_cpu(batch[0], normalization_ratio)
        batch_memory = -(-batch[1] // 1000)
        capacity[BATCH_CPU] = allocatable[BATCH_CPU] = str(batch_cpu)
        text = capacity[BATCH_MEMORY] = allocatable[BATCH_MEMORY] = canonical_text(batch_memory * NANO, memory_format)
        amounts[BATCH_CPU] = batch_cpu * 1000
        amounts[BATCH_MEMORY] = _memory_milli(text, batch_memory * 1000)
        origin_cpu = canonical_text(max(batch_cpu, 0) * NANO)
        if memory_format is QuantityFormat.BINARY_SI and batch_memory >= 0:
            origin_memory = text  # the same text
        else:
            origin_memory = canonical_text(max(batch_memory, 0) * NANO, QuantityFormat.BINARY_SI)
    else:
        for name in BATCH_RESOURCES:
            capacity.pop(name, None)
            allocatable.pop(name, None)
    annotations[ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE] = _origin(annotations, origin_cpu, origin_memory)
    if batch_cpu >= 0 and batch_memory >= 0:
        used = _third_party_batch(annotations)
        if used is not None:
            cpu_left = ceil_div(max(batch_cpu * NANO - used.get(BATCH_CPU, 0), 0), NANO)
            memory_left = max(batch_memory * NANO - used.get(BATCH_MEMORY, 0), 0)
            capacity[BATCH_CPU] = allocatable[BATCH_CPU] = cpu_text(cpu_left)
            text = capacity[BATCH_MEMORY] = allocatable[BATCH_MEMORY] = Quantity(
                memory_left, QuantityFormat.BINARY_SI
            ).canonical()
            amounts[BATCH_CPU] = cpu_left * 1000
            amounts[BATCH_MEMORY] = lenient_milli(text)
    if normalization_ratio is not None:
        annotations[ANNOTATION_CPU_NORMALIZATION_RATIO] = normalization_ratio
    if amplification_ratio is not None:
        annotations[ANNOTATION_AMPLIFICATION_RATIO] = amplification_ratio
    else:
        annotations.pop(ANNOTATION_AMPLIFICATION_RATIO, None)
    written: dict[str, str] = {}
    if batch is not None:
        written[BATCH_CPU], written[BATCH_MEMORY] = allocatable[BATCH_CPU], allocatable[BATCH_MEMORY]
    if mid is not None:
        written[MID_CPU], written[MID_MEMORY] = allocatable[MID_CPU], allocatable[MID_MEMORY]
    return {"annotations": annotations, "capacity": capacity, "allocatable": allocatable}, amounts, written

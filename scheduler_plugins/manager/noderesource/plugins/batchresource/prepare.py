"""What the batch plugin leaves on the Node (`plugins/util/util.go` PrepareNodeForResource,
`batchresource` Prepare): batch-cpu (milli-cores as a plain integer, times the CPU normalization
ratio when it is above 1) and batch-memory (bytes in the format of the node's memory capacity) in
`status.capacity` and `status.allocatable` (removed on reset, never written as 0 for that), the
`originExtendedAllocatable` annotation, and third-party batch allocations subtracted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE,
    ANNOTATION_THIRD_PARTY_ALLOCATIONS,
    BATCH_CPU,
    BATCH_MEMORY,
    PriorityClass,
)
from policies.apis.quantity import NANO, Quantity, QuantityError, QuantityFormat, canonical_text
from scheduler_plugins.manager.noderesource.framework import PreparedNode
from scheduler_plugins.manager.noderesource.inputs import Res, ceil_div, lenient_milli, multiply_milli, value_of
from scheduler_plugins.manager.noderesource.prepare import cpu_text, memory_milli

BATCH_RESOURCES: Final = (BATCH_CPU, BATCH_MEMORY)


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


def prepare_batch(
    node: PreparedNode, batch: Res | None, memory_format: QuantityFormat, normalization_ratio: str | None
) -> None:
    """Apply the node's batch result (None: the reset) to the prepared node."""
    batch_cpu = batch_memory = -1
    # the annotation's texts (canonical, memory in binary form): "0" for a removed resource
    origin_cpu = origin_memory = "0"
    if batch is not None:
        batch_cpu = _normalized_cpu(batch[0], normalization_ratio)
        batch_memory = -(-batch[1] // 1000)  # `ceil_div`, inlined: this runs for every node, every round
        node.set(BATCH_CPU, str(batch_cpu), batch_cpu * 1000)
        text = canonical_text(batch_memory * NANO, memory_format)
        node.set(BATCH_MEMORY, text, memory_milli(text, batch_memory * 1000))
        origin_cpu = canonical_text(max(batch_cpu, 0) * NANO)
        if memory_format is QuantityFormat.BINARY_SI and batch_memory >= 0:
            origin_memory = text  # the same text
        else:
            origin_memory = canonical_text(max(batch_memory, 0) * NANO, QuantityFormat.BINARY_SI)
    else:
        for name in BATCH_RESOURCES:
            node.remove(name)
    node.annotations[ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE] = _origin(node.annotations, origin_cpu, origin_memory)
    if batch_cpu >= 0 and batch_memory >= 0:
        used = _third_party_batch(node.annotations)
        if used is not None:
            cpu_left = ceil_div(max(batch_cpu * NANO - used.get(BATCH_CPU, 0), 0), NANO)
            memory_left = max(batch_memory * NANO - used.get(BATCH_MEMORY, 0), 0)
            node.set(BATCH_CPU, cpu_text(cpu_left), cpu_left * 1000)
            text = Quantity(memory_left, QuantityFormat.BINARY_SI).canonical()
            node.set(BATCH_MEMORY, text, lenient_milli(text))

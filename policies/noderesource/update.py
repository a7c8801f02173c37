"""Whether the manager writes a node now (`noderesource/resource_calculator.go`
isNodeResourceSyncNeeded, `pkg/util/resource.go` IsResourceDiff), so a node's status does not flap.

The status is written on the first round after start, when the last write is older than
`updateTimeThresholdSeconds`, or when a batch/mid resource appears, disappears or moves by more
than `resourceDiffThreshold` of its old value. The metadata is patched when the CPU normalization
ratio annotation is created, removed or moves by more than 0.01.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from policies.constants import ANNOTATION_CPU_NORMALIZATION_RATIO
from policies.noderesource.amplification import amplification_differs
from policies.noderesource.normalization import parse_ratio, ratio_differs
from policies.noderesource.prepare import BATCH_RESOURCES, MID_RESOURCES
from policies.quantity import Quantity, QuantityError
from policies.slo_config.colocation import ColocationStrategy

_COMPARED: Final = (*MID_RESOURCES, *BATCH_RESOURCES)


@dataclass(frozen=True, slots=True)
class Decision:
    status: bool
    meta: bool
    reason: str

    @property
    def update(self) -> bool:
        return self.status or self.meta


@lru_cache(maxsize=4096, typed=True)
def _milli_of(value: str | int | float) -> int:
    try:
        return Quantity.parse(value).milli_value()
    except QuantityError:
        return 0


def _milli(value: object) -> int:
    """The quantity in thousandths, 0 when it is not one (cached by text: the values repeat)."""
    if isinstance(value, (str, int, float)):
        return _milli_of(value)
    try:
        return Quantity.parse(value).milli_value()
    except QuantityError:
        return 0


def resource_difference(
    old: Mapping[str, object], new: Mapping[str, object], name: str, threshold: float
) -> str | None:
    """Why `name` differs (`IsResourceDiff`), or None when it does not."""
    if (name in old) != (name in new):
        return f"{name.removeprefix('kubernetes.io/')} {'added' if name in new else 'removed'}"
    if name not in old:
        return None
    before, after = _milli(old[name]), _milli(new[name])
    if abs(float(after - before)) > float(before) * threshold:
        percent = f"{abs(after - before) * 100 / before:.0f} %" if before else "from 0"
        return f"{name.removeprefix('kubernetes.io/')} differs by {percent} (threshold {threshold * 100:g} %)"
    return None


def _meta_reason(old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    try:
        before = parse_ratio(old.get(ANNOTATION_CPU_NORMALIZATION_RATIO))
    except ValueError:
        return "cpu-normalization-ratio unparsable"
    try:
        after = parse_ratio(new.get(ANNOTATION_CPU_NORMALIZATION_RATIO))
    except ValueError:
        return None
    if before is None and after is None:
        return None
    if before is None:
        return f"cpu-normalization-ratio {new[ANNOTATION_CPU_NORMALIZATION_RATIO]} to add"
    if after is None:
        return "cpu-normalization-ratio to remove"
    if ratio_differs(before, after):
        key = ANNOTATION_CPU_NORMALIZATION_RATIO
        return f"cpu-normalization-ratio {old[key]} -> {new[key]}"
    return None


def decide(
    strategy: ColocationStrategy,
    old_allocatable: Mapping[str, object],
    new_allocatable: Mapping[str, object],
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    last_write: float | None,
    now: float,
) -> Decision:
    """The write decision for one node; `last_write` None means no write since start."""
    reasons = []
    status = False
    if last_write is None:
        status = True
        reasons.append("first write")
    elif now - last_write > strategy.update_time_threshold_seconds:
        status = True
        reasons.append(f"last write {now - last_write:.0f}s ago (threshold {strategy.update_time_threshold_seconds}s)")
    threshold = strategy.resource_diff_threshold
    for name in _COMPARED:
        if name not in old_allocatable and name not in new_allocatable:
            continue  # absent on both sides: no difference (mid resources of a node without mid)
        why = resource_difference(old_allocatable, new_allocatable, name, threshold)
        if why is not None:
            status = True
            reasons.append(why)
    meta = False
    for why in (
        _meta_reason(old_annotations, new_annotations),
        amplification_differs(old_annotations, new_annotations),
    ):
        if why is not None:
            meta = True
            reasons.append(why)
    if not reasons:
        reasons.append(
            f"unchanged within {strategy.resource_diff_threshold * 100:g} %, "
            f"written {now - (last_write or now):.0f}s ago (threshold {strategy.update_time_threshold_seconds}s)"
        )
    return Decision(status, meta, "; ".join(reasons))

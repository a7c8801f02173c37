"""Node resource amplification on `nodes/status` UPDATE
(`pkg/webhook/node/plugins/resourceamplification/resource_amplification.go`).

The kubelet reports the real allocatable; Koordinator keeps it in the raw-allocatable annotation and
publishes cpu/memory multiplied by the node's amplification ratios, so the scheduler can overcommit a
node without the kubelet knowing. Only a change of the reported cpu/memory refreshes the raw values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

from policies.admission.plugin import Denied
from policies.apis.constants import (
    ANNOTATION_AMPLIFICATION_RATIO,
    ANNOTATION_RAW_ALLOCATABLE,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
)
from policies.apis.objects import annotations_of, ensure_map, metadata_of
from policies.apis.quantity import Quantity, QuantityError

AMPLIFIED_RESOURCES: Final = (RESOURCE_CPU, RESOURCE_MEMORY)
#: the largest amount a Kubernetes quantity holds as an int64 (cpu in millicores, memory in bytes):
#: what Koordinator's `Amplify` (apis/extension/node_resource_amplification.go) converts back to
MAX_AMPLIFIED: Final = 2**63 - 1


def _allocatable(node: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    status = node.get("status") if isinstance(node, Mapping) else None
    allocatable = status.get("allocatable") if isinstance(status, Mapping) else None
    return allocatable if isinstance(allocatable, Mapping) else None


def _amplified_quantities(allocatable: Mapping[str, Any] | None, where: str) -> dict[str, Quantity]:
    """The cpu/memory entries of a ResourceList, parsed; a malformed quantity is a denial, not a crash."""
    found: dict[str, Quantity] = {}
    for name in AMPLIFIED_RESOURCES:
        if allocatable is not None and name in allocatable:
            try:
                found[name] = Quantity.parse(allocatable[name])
            except QuantityError as exc:
                raise Denied(f"{where}[{name}]: {exc}", code=400) from exc  # as Go fails to decode it
    return found


def _same_values(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    return a.keys() == b.keys() and all(a[k].same_value(b[k]) for k in a)


def parse_ratios(text: str) -> dict[str, float]:
    """The ratio annotation: a JSON object of resource name to number; anything else is refused."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Denied(f"failed to parse annotation {ANNOTATION_AMPLIFICATION_RATIO}: {exc}", code=500) from exc
    if not isinstance(value, dict):
        raise Denied(
            f"failed to parse annotation {ANNOTATION_AMPLIFICATION_RATIO}: "
            f"expected a JSON object of resource name to ratio, got {text!r}",
            code=500,
        )
    ratios = {}
    for name, ratio in value.items():
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
            raise Denied(
                f"failed to parse annotation {ANNOTATION_AMPLIFICATION_RATIO}: "
                f"ratio of {name} must be a number, got {json.dumps(ratio)}",
                code=500,
            )
        try:
            ratios[name] = float(ratio)
        except OverflowError:  # an integer of hundreds of digits
            ratios[name] = math.inf
        if not math.isfinite(ratios[name]):
            raise Denied(f"annotation {ANNOTATION_AMPLIFICATION_RATIO}: ratio of {name} must be a finite number")
    return ratios


def _amount(quantity: Quantity, name: str) -> int:
    """The int64 Koordinator amplifies: millicores of cpu, bytes of memory."""
    return quantity.milli_value() if name == RESOURCE_CPU else quantity.value()


def ratio_range_error(ratios: Mapping[str, float], raw: Mapping[str, Quantity]) -> str | None:
    """Why amplifying `raw` by `ratios` leaves the range of a quantity, or None."""
    for name in AMPLIFIED_RESOURCES:
        ratio = ratios.get(name)
        if ratio is None or ratio <= 1 or name not in raw:
            continue
        if _amount(raw[name], name) * ratio > MAX_AMPLIFIED:
            return (
                f"annotation {ANNOTATION_AMPLIFICATION_RATIO}: ratio {ratio:g} of {name} amplifies "
                f"{raw[name].canonical()} past the largest quantity ({MAX_AMPLIFIED} "
                f"{'millicores' if name == RESOURCE_CPU else 'bytes'})"
            )
    return None


def check_node_ratios(node: Mapping[str, Any]) -> None:
    """Refuse a node whose ratio annotation does not parse, is not finite, or amplifies its
    allocatable (the raw-allocatable annotation, else status.allocatable) out of range."""
    ratio_text = annotations_of(node).get(ANNOTATION_AMPLIFICATION_RATIO)
    if not ratio_text:
        return
    ratios = parse_ratios(ratio_text)
    raw_text = annotations_of(node).get(ANNOTATION_RAW_ALLOCATABLE)
    if raw_text:
        raw = _raw_from_annotation(raw_text)
    else:
        raw = _amplified_quantities(_allocatable(node), "status.allocatable")
    error = ratio_range_error(ratios, raw)
    if error:
        raise Denied(error)


def _raw_from_annotation(text: str) -> dict[str, Quantity]:
    try:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("expected a JSON object (a ResourceList)")
        return _amplified_quantities(value, f"annotation {ANNOTATION_RAW_ALLOCATABLE}")
    except ValueError as exc:
        raise Denied(f"failed to parse annotation {ANNOTATION_RAW_ALLOCATABLE}: {exc}", code=500) from exc


def amplify_node(node: dict[str, Any], old_node: Mapping[str, Any] | None) -> None:
    """Amplify `node` (the new object of a status UPDATE) in place."""
    ratio_text = annotations_of(node).get(ANNOTATION_AMPLIFICATION_RATIO)
    if not ratio_text:
        annotations = metadata_of(node).get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(ANNOTATION_RAW_ALLOCATABLE, None)
        return
    allocatable = _allocatable(node)
    if allocatable is None:
        return
    reported = _amplified_quantities(allocatable, "status.allocatable")
    raw_text = annotations_of(node).get(ANNOTATION_RAW_ALLOCATABLE)
    if not raw_text or not _same_values(
        reported, _amplified_quantities(_allocatable(old_node), "oldObject status.allocatable")
    ):
        raw = reported
        if raw:
            document = {name: raw[name].canonical() for name in sorted(raw)}
            ensure_map(ensure_map(node, "metadata"), "annotations")[ANNOTATION_RAW_ALLOCATABLE] = json.dumps(
                document, separators=(",", ":")
            )
    else:
        raw = _raw_from_annotation(raw_text)
    ratios = parse_ratios(ratio_text)
    error = ratio_range_error(ratios, raw)
    if error:
        raise Denied(error)
    for name in AMPLIFIED_RESOURCES:
        ratio = ratios.get(name)
        if ratio is None or ratio <= 1 or name not in raw:
            continue
        amplified_milli = int(raw[name].milli_value() * ratio)  # Go's int64(float64) truncates
        allocatable[name] = Quantity(amplified_milli * 10**6, raw[name].format).canonical()  # type: ignore[index]

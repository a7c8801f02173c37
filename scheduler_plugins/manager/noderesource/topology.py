"""The NodeResourceTopology's zone batch resources (`plugins/util/util.go` UpdateNRTZoneListIfNeeded).

Each zone with a result gets `kubernetes.io/batch-cpu` and `kubernetes.io/batch-memory` with
capacity = allocatable = available = the value, each field replaced only when it moved by more than
the diff threshold, and inserted (sorted by name) when missing. A zone without a result gets its
batch resources set to 0, not removed (Koordinator's behaviour).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY
from policies.apis.quantity import Quantity, QuantityError

_FIELDS = ("capacity", "allocatable", "available")


def _milli(value: Any) -> int:
    try:
        return Quantity.parse(value).milli_value()
    except QuantityError:
        return 0


def _differs(old: Any, new: str, threshold: float) -> bool:
    before, after = _milli(old), _milli(new)
    return abs(float(after - before)) > float(before) * threshold


def updated_zones(
    zones: list[Mapping[str, Any]], results: Mapping[str, Mapping[str, str]], threshold: float
) -> tuple[list[dict[str, Any]], bool]:
    """The NRT's new `zones` and whether anything moved enough to write."""
    out: list[dict[str, Any]] = copy.deepcopy([dict(z) for z in zones])
    changed = False
    for zone in out:
        resources: list[dict[str, Any]] = zone.setdefault("resources", [])
        values = results.get(str(zone.get("name") or ""))
        if values is None:
            for existing in resources:
                if existing.get("name") in (BATCH_CPU, BATCH_MEMORY) and any(
                    _milli(existing.get(f, 0)) for f in _FIELDS
                ):
                    changed = True
                    for field in _FIELDS:
                        existing[field] = "0"
            continue
        for name in (BATCH_CPU, BATCH_MEMORY):
            value = values[name]
            info: dict[str, Any] | None = next((r for r in resources if r.get("name") == name), None)
            if info is None:
                changed = True
                resources.append({"name": name, "capacity": value, "allocatable": value, "available": value})
                resources.sort(key=lambda r: str(r.get("name") or ""))
                continue
            for field in _FIELDS:
                if _differs(info.get(field, "0"), value, threshold):
                    changed = True
                    info[field] = value
    return out, changed

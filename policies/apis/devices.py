"""The Device CRD (`scheduling.koordinator.sh/v1alpha1` Device, one per node) and the pod's
`scheduling.koordinator.sh/device-allocated` annotation, as Koordinator writes them. Pure.

GPU amounts are integers: `koordinator.sh/gpu-core` and `koordinator.sh/gpu-memory-ratio` in
percent of one card (100 = a whole GPU), `koordinator.sh/gpu-memory` in bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import ANNOTATION_DEVICE_ALLOCATED, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO
from policies.apis.objects import annotations_of, spec_of
from policies.apis.quantity import QuantityError, scalar_of, scalar_text

DEVICE_TYPE_GPU: Final = "gpu"
FULL: Final = 100  # percent of one card


@dataclass(frozen=True)
class DeviceInfo:
    """One device of a node: its type, minor number, health and capacity."""

    type: str
    minor: int
    health: bool
    resources: Mapping[str, int]
    numa_node: int = -1

    @property
    def memory(self) -> int:
        return self.resources.get(GPU_MEMORY, 0)


def _scalars(raw: Any) -> dict[str, int]:
    out = {}
    for name, value in raw.items() if isinstance(raw, Mapping) else ():
        try:
            out[str(name)] = scalar_of(str(name), value)
        except (QuantityError, TypeError):
            continue
    return out


def devices_of(device: Mapping[str, Any] | None) -> list[DeviceInfo]:
    """The devices listed in a Device object (malformed entries are skipped), by type then minor.
    A GPU without gpu-core / gpu-memory-ratio in its resources has a whole card of each."""
    out = []
    for raw in (spec_of(device).get("devices") or []) if device else []:
        if not isinstance(raw, Mapping):
            continue
        try:
            minor = int(raw.get("minor", -1))
        except (TypeError, ValueError):
            continue
        kind = str(raw.get("type") or "")
        resources = _scalars(raw.get("resources"))
        if kind == DEVICE_TYPE_GPU:
            resources.setdefault(GPU_CORE, FULL)
            resources.setdefault(GPU_MEMORY_RATIO, FULL)
        topology = raw.get("topology")
        try:
            numa = int(topology.get("nodeID", -1)) if isinstance(topology, Mapping) else -1
        except (TypeError, ValueError):
            numa = -1
        out.append(DeviceInfo(kind, minor, raw.get("health", True) is not False, resources, numa))
    return sorted(out, key=lambda d: (d.type, d.minor))


@dataclass(frozen=True)
class DeviceAllocation:
    minor: int
    resources: Mapping[str, int] = field(default_factory=dict)


def allocations_of(pod: Mapping[str, Any]) -> dict[str, list[DeviceAllocation]]:
    """The device-allocated annotation by device type; missing or malformed reads as none."""
    text = annotations_of(pod).get(ANNOTATION_DEVICE_ALLOCATED)
    if not text:
        return {}
    try:
        raw = json.loads(text)
        return {
            str(kind): [DeviceAllocation(int(a["minor"]), _scalars(a.get("resources"))) for a in items]
            for kind, items in raw.items()
        }
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def allocations_json(allocations: Mapping[str, list[DeviceAllocation]]) -> str:
    """The annotation text, quantities as Kubernetes prints them (`"8Gi"`, `"50"`)."""
    return json.dumps(
        {
            kind: [
                {
                    "minor": a.minor,
                    "resources": {name: scalar_text(name, amount) for name, amount in sorted(a.resources.items())},
                }
                for a in items
            ]
            for kind, items in allocations.items()
        },
        separators=(",", ":"),
    )

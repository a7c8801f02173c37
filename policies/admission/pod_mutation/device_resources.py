"""GPU resource normalisation (`pkg/webhook/pod/mutating/device_resource_spec.go`).

`koordinator.sh/gpu: N` becomes `gpu-core: N` and `gpu-memory-ratio: N`; every GPU container gets a
`gpu.shared` count unless it asked for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.plugin import Denied
from policies.apis.constants import DEVICE_RESOURCES, GPU, GPU_CORE, GPU_MEMORY_RATIO, GPU_SHARED
from policies.apis.objects import ensure_map, spec_of
from policies.apis.quantity import Quantity, QuantityError


def normalise_device_resources(pod: dict[str, Any]) -> None:
    for container in spec_of(pod).get("containers") or []:
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            continue
        requests, limits = _resource_list(resources, "requests"), _resource_list(resources, "limits")
        if DEVICE_RESOURCES.isdisjoint(requests) and DEVICE_RESOURCES.isdisjoint(limits):
            continue
        asked_for_shared = GPU_SHARED in requests
        try:
            if GPU in requests:
                gpus = _integer_quantity(Quantity.parse(requests[GPU]).value())
                _set_both(resources, {GPU_CORE: gpus, GPU_MEMORY_RATIO: gpus})
                for section in ("requests", "limits"):
                    if isinstance(resources.get(section), dict):
                        resources[section].pop(GPU, None)
            if not asked_for_shared:
                _set_both(resources, {GPU_SHARED: _shared_count(resources.get("requests") or {})})
        except QuantityError as exc:
            raise Denied(f"quantities must be valid: {exc}", code=500) from exc


def _resource_list(resources: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    value = resources.get(section)
    return value if isinstance(value, Mapping) else {}


def _integer_quantity(value: int) -> str:
    return Quantity.from_int(value).canonical()


def _shared_count(requests: Mapping[str, Any]) -> str:
    for name in (GPU_MEMORY_RATIO, GPU_CORE):
        if name in requests:
            value = Quantity.parse(requests[name]).value()
            return _integer_quantity(value // 100 if value > 100 and value % 100 == 0 else 1)
    return _integer_quantity(1)


def _set_both(resources: dict[str, Any], values: Mapping[str, str]) -> None:
    for section in ("requests", "limits"):
        ensure_map(resources, section).update(values)

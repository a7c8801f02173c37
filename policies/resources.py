"""Pod resource arithmetic shared by validators (Kubernetes `PodRequests` semantics)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.objects import spec_of
from policies.quantity import Quantity


def _resource_list(raw: object) -> dict[str, Quantity]:
    """Parse a ResourceList; raises QuantityError on a malformed quantity."""
    if not isinstance(raw, Mapping):
        return {}
    return {name: Quantity.parse(value) for name, value in raw.items()}


def _container_requests(container: object) -> dict[str, Quantity]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    return _resource_list(resources.get("requests")) if isinstance(resources, Mapping) else {}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Quantity]:
    """Containers summed, each init container as a per-resource maximum, then overhead added."""
    spec = spec_of(pod)
    total: dict[str, Quantity] = {}
    for container in spec.get("containers") or []:
        for name, quantity in _container_requests(container).items():
            total[name] = total[name] + quantity if name in total else quantity
    for container in spec.get("initContainers") or []:
        for name, quantity in _container_requests(container).items():
            if name not in total or quantity > total[name]:
                total[name] = quantity
    for name, quantity in _resource_list(spec.get("overhead")).items():
        total[name] = total[name] + quantity if name in total else quantity
    return total

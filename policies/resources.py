"""A pod's requests and limits as kube-scheduler computes them (`resource.PodRequests`/`PodLimits`).

The one implementation the webhook and the scheduler share, so both see the same amount for one
pod: containers are summed; a sidecar (an init container with `restartPolicy: Always`) keeps
running, so it is added to the steady state; a regular init container runs beside the sidecars
started before it, and the pod needs the largest such moment; then `spec.overhead` is added.

The amounts are generic: the webhook keeps exact `Quantity` values, the scheduler compares integer
scalars (`policies.quantity.resource_list`). `non_missing` is kube-scheduler's
`NonMissingContainerRequests`: amounts assumed for a container that states none of a resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeVar

from policies.objects import spec_of
from policies.quantity import Quantity

Amount = TypeVar("Amount", int, Quantity)
#: turns a raw v1.ResourceList (or None) into amounts; raises QuantityError on a malformed quantity
ParseResources = Callable[[Any], dict[str, Amount]]

CONTAINER_RESTART_POLICY_ALWAYS: Final = "Always"


def _add(into: dict[str, Amount], other: Mapping[str, Amount]) -> None:
    for name, amount in other.items():
        into[name] = into[name] + amount if name in into else amount


def _max(into: dict[str, Amount], other: Mapping[str, Amount]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def _container_amounts(
    container: object, field: str, parse: ParseResources[Amount], non_missing: Mapping[str, Amount] | None
) -> dict[str, Amount]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    amounts = parse(resources.get(field) if isinstance(resources, Mapping) else None)
    if non_missing:
        for name, amount in non_missing.items():
            amounts.setdefault(name, amount)
    return amounts


def pod_resources(
    pod: Mapping[str, Any],
    field: Literal["requests", "limits"],
    parse: ParseResources[Amount],
    non_missing: Mapping[str, Amount] | None = None,
) -> dict[str, Amount]:
    """The pod's total `field` (requests or limits) per resource, overhead included."""
    spec = spec_of(pod)
    total: dict[str, Amount] = {}
    for container in spec.get("containers") or []:
        _add(total, _container_amounts(container, field, parse, non_missing))
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for container in spec.get("initContainers") or []:
        amounts = _container_amounts(container, field, parse, non_missing)
        if isinstance(container, Mapping) and container.get("restartPolicy") == CONTAINER_RESTART_POLICY_ALWAYS:
            _add(total, amounts)
            _add(sidecars, amounts)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, amounts)
            _max(init_peak, running)
    _max(total, init_peak)
    _add(total, parse(spec.get("overhead")))
    return total

"""A pod's requests and limits as kube-scheduler computes them (`resource.PodRequests`/`PodLimits`).

The one implementation the webhook and the scheduler share, so both see the same amount for one
pod: containers are summed; a sidecar (an init container with `restartPolicy: Always`) keeps
running, so it is added to the steady state; a regular init container runs beside the sidecars
started before it, and the pod needs the largest such moment. Pod-level resources
(`spec.resources`, the PodLevelResources feature, on by default since Kubernetes 1.34) then replace
the containers' total for each resource they name that is supported at pod level (cpu, memory,
`hugepages-*`), as `PodRequests`/`PodLimits` of `k8s.io/component-helpers/resource` do for
Koordinator's `util.GetPodRequest`. Last, `spec.overhead` is added: to every request, and only to
limits that are set and not zero (a pod without a memory limit does not gain one).

The amounts are generic: the webhook keeps exact `Quantity` values, the scheduler compares integer
scalars (`policies.apis.quantity.resource_list`). `non_missing` is kube-scheduler's
`NonMissingContainerRequests`: amounts assumed for a container that states none of a resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeVar

from policies.apis.objects import spec_of
from policies.apis.quantity import Quantity

Amount = TypeVar("Amount", int, Quantity)
#: turns a raw v1.ResourceList (or None) into amounts; raises QuantityError on a malformed quantity
ParseResources = Callable[[Any], dict[str, Amount]]

CONTAINER_RESTART_POLICY_ALWAYS: Final = "Always"
#: resources a pod may state at pod level (`IsSupportedPodLevelResource`); hugepages by prefix
POD_LEVEL_RESOURCES: Final = frozenset({"cpu", "memory"})
HUGEPAGES_PREFIX: Final = "hugepages-"


def is_pod_level_resource(name: str) -> bool:
    return name in POD_LEVEL_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def _pod_level(spec: Mapping[str, Any], field: str) -> Mapping[str, Any] | None:
    """`spec.resources.<field>` restricted to pod-level resources, or None when the pod states
    none (`IsPodLevelRequestsSet`; for limits `IsPodLevelResourcesSet`, which looks at both)."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return None
    wanted = resources.get(field)
    wanted = wanted if isinstance(wanted, Mapping) else {}
    gate = ("requests",) if field == "requests" else ("requests", "limits")
    if not any(
        isinstance(resources.get(g), Mapping) and any(is_pod_level_resource(str(n)) for n in resources[g]) for g in gate
    ):
        return None
    return {name: value for name, value in wanted.items() if is_pod_level_resource(str(name))}


def _is_zero(amount: int | Quantity) -> bool:
    return amount.is_zero() if isinstance(amount, Quantity) else amount == 0


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
    # `dict` first: the check against the Mapping ABC costs more, and this runs per container
    resources = container.get("resources") if isinstance(container, (dict, Mapping)) else None
    amounts = parse(resources.get(field) if isinstance(resources, (dict, Mapping)) else None)
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
    # each section the pod does not have is skipped (a parser reads None as no amounts): most pods
    # have neither init containers, pod-level resources nor an overhead, and this runs per pod
    init_containers = spec.get("initContainers")
    if init_containers:
        _max(total, _init_peak(total, init_containers, field, parse, non_missing))
    if "resources" in spec:
        pod_level = _pod_level(spec, field)
        if pod_level:
            total.update(parse(pod_level))
    if spec.get("overhead") is None:
        return total
    overhead = parse(spec.get("overhead"))
    if field == "limits":
        overhead = {name: amount for name, amount in overhead.items() if name in total and not _is_zero(total[name])}
    _add(total, overhead)
    return total


def _init_peak(
    total: dict[str, Amount],
    init_containers: Any,
    field: str,
    parse: ParseResources[Amount],
    non_missing: Mapping[str, Amount] | None,
) -> dict[str, Amount]:
    """The largest moment of the init phase (each regular init container beside the sidecars started
    before it); each sidecar is added to `total` too, since it keeps running."""
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for container in init_containers:
        amounts = _container_amounts(container, field, parse, non_missing)
        if isinstance(container, Mapping) and container.get("restartPolicy") == CONTAINER_RESTART_POLICY_ALWAYS:
            _add(total, amounts)
            _add(sidecars, amounts)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, amounts)
            _max(init_peak, running)
    return init_peak

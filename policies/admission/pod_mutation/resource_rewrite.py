"""Batch / mid resource rewrite (`mutatePodResourceSpec` in
`pkg/webhook/pod/mutating/cluster_colocation_profile.go`).

For a pod whose defaulted priority class is koord-batch or koord-mid, cpu and memory of every init
container and container become the extended resources of that class: cpu as an integer count of
milli-cores (`1` -> `1k`, `500m` -> `500`), memory unchanged. Requests are back-filled from limits,
limits are never invented. `spec.overhead` is renamed too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.plugin import Denied
from policies.apis.constants import EXTENDED_RESOURCE_NAMES, RESOURCE_CPU
from policies.apis.objects import spec_of
from policies.apis.qos import defaulted_priority_class
from policies.apis.quantity import QuantityError, milli_integer


def rewrite_pod_resources(pod: dict[str, Any]) -> None:
    names = EXTENDED_RESOURCE_NAMES.get(defaulted_priority_class(pod))
    if names is None:
        return
    spec = spec_of(pod)
    for section in ("initContainers", "containers"):
        for container in spec.get(section) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                _rewrite_container(resources, names)
    overhead = spec.get("overhead")
    if isinstance(overhead, dict):
        _rename(overhead, names)


def _rewrite_container(resources: dict[str, Any], names: Mapping[str, str]) -> None:
    requests, limits = resources.get("requests"), resources.get("limits")
    if isinstance(requests, dict):
        _rename(requests, names)
    if isinstance(limits, dict):
        _rename(limits, names)
        for extended in names.values():
            if extended in limits and not (isinstance(requests, dict) and extended in requests):
                if not isinstance(requests, dict):
                    requests = resources["requests"] = {}
                requests[extended] = limits[extended]


def _rename(resource_list: dict[str, Any], names: Mapping[str, str]) -> None:
    for plain, extended in names.items():
        if plain not in resource_list:
            continue
        value = resource_list.pop(plain)
        if plain == RESOURCE_CPU:
            try:
                value = milli_integer(value)
            except QuantityError as exc:
                raise Denied(f"quantities must be valid: {exc}", code=500) from exc
        resource_list[extended] = value

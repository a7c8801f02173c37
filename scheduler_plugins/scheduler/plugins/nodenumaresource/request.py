"""NodeNUMAResource's reading of a pod (which CPUs it binds, by which policies) and its allocation
written back (`resource-status`, the split over NUMA nodes): the pure half of the plugin."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_NUMA_TOPOLOGY_SPEC,
    ANNOTATION_RESOURCE_SPEC,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    PriorityClass,
    QoSClass,
)
from policies.apis.cpuset import NUMANodeResource, ResourceStatus, format_cpuset
from policies.apis.qos import raw_qos_class
from policies.apis.quantity import scalar_text
from scheduler_plugins.scheduler.framework.status import SKIP, SUCCESS, Status, unresolvable
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import FULL_PCPUS, SPREAD_BY_PCPUS
from scheduler_plugins.scheduler.plugins.nodenumaresource.topology import Allocation, NodeState
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector

DEFAULT_POLICY: Final = "Default"
ERR_NOT_INTEGER = "the requested CPUs must be integer"


def json_annotation(pod: PodInfo, key: str) -> Mapping[str, Any]:
    try:
        value = json.loads(pod.annotations.get(key) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class PodState:
    """What PreFilter learnt of the pod (its cycle state)."""

    cpu: int  # millicores requested
    memory: int
    allow_cpuset: bool
    bind: bool  # the pod itself asks for bound CPUs
    policy: str  # FullPCPUs | SpreadByPCPUs | ""
    required: bool
    numa_policy: str

    @property
    def num_cpus(self) -> int:
        return self.cpu // 1000


def pod_state(pod: PodInfo, default_cpu_bind_policy: str) -> tuple[PodState | None, Status]:
    """PreFilter's reading of the pod: whether it binds CPUs, by which policy, under which NUMA
    topology policy (Koordinator's `preFilterState`); None to skip a pod that requests nothing."""
    requests = pod.requests
    if not any(requests.values()):
        return None, SKIP
    cpu = requests.get(RESOURCE_CPU, 0)
    spec = json_annotation(pod, ANNOTATION_RESOURCE_SPEC)
    allow = raw_qos_class(pod.obj) in (QoSClass.LSE, QoSClass.LSR) and pod.priority_class is PriorityClass.PROD
    policy, required = "", False
    if allow:
        preferred = str(spec.get("preferredCPUBindPolicy") or "")
        policy = default_cpu_bind_policy if preferred in ("", DEFAULT_POLICY) else preferred
        wanted = str(spec.get("requiredCPUBindPolicy") or "")
        if wanted:
            policy, required = (default_cpu_bind_policy if wanted == DEFAULT_POLICY else wanted), True
    bind = False
    if policy in (FULL_PCPUS, SPREAD_BY_PCPUS):
        if cpu % 1000:
            return None, unresolvable(ERR_NOT_INTEGER)
        bind = cpu > 0
    numa_policy = str(json_annotation(pod, ANNOTATION_NUMA_TOPOLOGY_SPEC).get("numaTopologyPolicy") or "")
    return PodState(cpu, requests.get(RESOURCE_MEMORY, 0), allow, bind, policy, required, numa_policy), SUCCESS


def resource_status(allocation: Allocation) -> ResourceStatus:
    return ResourceStatus(
        format_cpuset(allocation.cpus),
        tuple(
            NUMANodeResource(n, {name: scalar_text(name, amount) for name, amount in sorted(res.items()) if amount})
            for n, res in sorted(allocation.numa.items())
        ),
    )


def split_by_numa(ns: NodeState, cpus: frozenset[int], hint: list[int], cpu: int, memory: int) -> dict[int, Vector]:
    """The pod's cpu and memory per admitted NUMA node: bound CPUs where they are, the rest filled
    into the NUMA nodes' free room in hint order."""
    free = ns.numa_free()
    out: dict[int, Vector] = {n: {} for n in hint}
    cpu_node = {c.id: c.node for c in ns.topo.topology.cpus}
    if cpus:
        for cpu_id in cpus:
            node = cpu_node[cpu_id]
            out.setdefault(node, {})[RESOURCE_CPU] = out.get(node, {}).get(RESOURCE_CPU, 0) + 1000
        cpu = 0
    for name, left in ((RESOURCE_CPU, cpu), (RESOURCE_MEMORY, memory)):
        for n in hint:
            if left <= 0:
                break
            take = min(left, max(free[n].get(name, 0), 0)) if n != hint[-1] else left
            if take:
                out[n][name] = out[n].get(name, 0) + take
                left -= take
    return {n: res for n, res in out.items() if res}

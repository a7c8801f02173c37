"""What NodeNUMAResource knows of one node: its CPU topology and NUMA zones (from the node's
NodeResourceTopology), kubelet-reserved CPUs, and what the pods on it hold (cpusets and per-NUMA
resources, read back from their resource-status annotation or recorded at Reserve)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from policies.apis.constants import ANNOTATION_NODE_RESERVATION, RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.cpuset import CPUSetError, CPUTopology, cpu_topology_of, parse_cpuset
from policies.apis.quantity import QuantityError, scalar_of
from scheduler_plugins.scheduler.podinfo import Vector

#: NUMA zone names in a NodeResourceTopology: `node-0`, `node-1`, ...
ZONE_PREFIX = "node-"


@dataclass(frozen=True)
class Allocation:
    """What one pod holds on a node: CPUs and per-NUMA-node resources (cpu in millicores)."""

    cpus: frozenset[int] = frozenset()
    numa: Mapping[int, Vector] = field(default_factory=dict)
    assumed: bool = False  # recorded at Reserve, not yet read back from the bound pod


@dataclass(frozen=True)
class NodeTopology:
    topology: CPUTopology
    zone_memory: Mapping[int, int]  # NUMA node -> allocatable memory (bytes), when the NRT says

    @classmethod
    def of(cls, nrt: Mapping[str, Any]) -> NodeTopology:
        memory: dict[int, int] = {}
        for zone in nrt.get("zones") or []:
            name = str(zone.get("name") or "")
            if not name.startswith(ZONE_PREFIX) or not name[len(ZONE_PREFIX) :].isdigit():
                continue
            for res in zone.get("resources") or []:
                if res.get("name") == RESOURCE_MEMORY:
                    try:
                        memory[int(name[len(ZONE_PREFIX) :])] = scalar_of(
                            RESOURCE_MEMORY, res.get("allocatable", res.get("capacity", 0))
                        )
                    except (QuantityError, TypeError):
                        continue
        return cls(cpu_topology_of(nrt), memory)


def reserved_cpus(node_annotations: Mapping[str, str]) -> frozenset[int]:
    """Kubelet-reserved CPUs (`node.koordinator.sh/reservation` `{"reservedCPUs": "0-1"}`)."""
    text = node_annotations.get(ANNOTATION_NODE_RESERVATION)
    if not text:
        return frozenset()
    try:
        return parse_cpuset(str(json.loads(text).get("reservedCPUs") or ""))
    except (ValueError, AttributeError, CPUSetError):
        return frozenset()


@dataclass
class NodeState:
    """One node's topology and allocations, and what is free on it."""

    topo: NodeTopology
    reserved: frozenset[int]
    node_memory: int
    allocations: Mapping[str, Allocation]

    def free_cpus(self) -> frozenset[int]:
        taken: set[int] = set(self.reserved)
        for allocation in self.allocations.values():
            taken |= allocation.cpus
        return frozenset(c.id for c in self.topo.topology.cpus if c.id not in taken)

    def numa_capacity(self) -> dict[int, Vector]:
        nodes = self.topo.topology.numa_nodes()
        out = {}
        for n in nodes:
            cpus = sum(1 for c in self.topo.topology.cpus if c.node == n and c.id not in self.reserved)
            memory = self.topo.zone_memory.get(n, self.node_memory // max(len(nodes), 1))
            out[n] = {RESOURCE_CPU: cpus * 1000, RESOURCE_MEMORY: memory}
        return out

    def numa_free(self) -> dict[int, Vector]:
        free = self.numa_capacity()
        cpu_node = {c.id: c.node for c in self.topo.topology.cpus}
        for allocation in self.allocations.values():
            if allocation.numa:
                for n, resources in allocation.numa.items():
                    for name, amount in resources.items():
                        if n in free and name in free[n]:
                            free[n][name] -= amount
            else:
                for cpu in allocation.cpus:
                    if cpu_node.get(cpu) in free:
                        free[cpu_node[cpu]][RESOURCE_CPU] -= 1000
        return free


def numa_hint(state: NodeState, need: Vector, policy: str, order: list[int]) -> list[int] | None:
    """The NUMA nodes a pod's cpu/memory go to under a Restricted or SingleNUMANode policy (the
    topology manager's admission): SingleNUMANode needs one NUMA node with room; Restricted the
    fewest NUMA nodes whose capacity could hold the request, with room now. None: not admitted."""
    capacity, free = state.numa_capacity(), state.numa_free()

    def fits(nodes: tuple[int, ...], table: Mapping[int, Vector]) -> bool:
        return all(sum(table[n].get(r, 0) for n in nodes) >= amount for r, amount in need.items())

    sizes = [1] if policy == "SingleNUMANode" else range(1, len(order) + 1)
    for size in sizes:
        possible = [combo for combo in combinations(order, size) if fits(combo, capacity)]
        if possible:
            admitted = [combo for combo in possible if fits(combo, free)]
            return list(admitted[0]) if admitted else None
    return None

"""Linux cpuset lists (`0-3,8-11`) and the NUMA annotations Koordinator writes and reads.

Pure: the scheduler writes `scheduling.koordinator.sh/resource-status` on a pod when it binds its
CPUs; the koordlet reads it back (the LSR/LSE CPUs). The CPU topology of a node comes in the
`node.koordinator.sh/cpu-topology` annotation of its NodeResourceTopology, in Koordinator's JSON:
`{"detail": [{"id": 0, "core": 0, "socket": 0, "node": 0}, ...]}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from policies.apis.constants import ANNOTATION_CPU_TOPOLOGY, ANNOTATION_RESOURCE_STATUS
from policies.apis.objects import annotations_of


class CPUSetError(ValueError):
    """Text that is not a cpuset list."""


def parse_cpuset(text: str) -> frozenset[int]:
    """`0-3,8` -> {0, 1, 2, 3, 8}; the empty string is the empty set."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            first, last = int(low), int(high) if sep else int(low)
        except ValueError as exc:
            raise CPUSetError(f"invalid cpuset {text!r}") from exc
        if first < 0 or last < first:
            raise CPUSetError(f"invalid cpuset range {part!r} in {text!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def format_cpuset(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 3, 8} -> `0-3,8` (ranges ascending, as the kernel and Koordinator print them)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class CPUInfo:
    id: int
    core: int
    socket: int
    node: int


@dataclass(frozen=True)
class CPUTopology:
    """A node's logical CPUs; derived values are computed once (the topology is immutable)."""

    cpus: tuple[CPUInfo, ...] = ()

    @cached_property
    def valid(self) -> bool:
        return bool(self.cpus) and self.cpus_per_core > 0

    @cached_property
    def cpus_per_core(self) -> int:
        counts: dict[tuple[int, int], int] = {}
        for cpu in self.cpus:
            counts[(cpu.socket, cpu.core)] = counts.get((cpu.socket, cpu.core), 0) + 1
        return max(counts.values(), default=0)

    def numa_nodes(self) -> list[int]:
        return list(self._numa_nodes)

    @cached_property
    def _numa_nodes(self) -> tuple[int, ...]:
        return tuple(sorted({c.node for c in self.cpus}))


def cpu_topology_of(obj: Mapping[str, Any] | None) -> CPUTopology:
    """The cpu-topology annotation of a NodeResourceTopology; missing or malformed is empty
    (an invalid topology: no CPU can be bound there)."""
    text = annotations_of(obj).get(ANNOTATION_CPU_TOPOLOGY) if obj else None
    if not text:
        return CPUTopology()
    try:
        detail = json.loads(text).get("detail") or []
        cpus = tuple(
            CPUInfo(int(c["id"]), int(c.get("core", 0)), int(c.get("socket", 0)), int(c.get("node", 0))) for c in detail
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return CPUTopology()
    if len({c.id for c in cpus}) != len(cpus):
        return CPUTopology()
    return CPUTopology(tuple(sorted(cpus, key=lambda c: c.id)))


@dataclass(frozen=True)
class NUMANodeResource:
    node: int
    resources: Mapping[str, str]


@dataclass(frozen=True)
class ResourceStatus:
    """`scheduling.koordinator.sh/resource-status`: the bound cpuset and per-NUMA-node resources."""

    cpuset: str = ""
    numa_node_resources: tuple[NUMANodeResource, ...] = field(default_factory=tuple)

    def cpus(self) -> frozenset[int]:
        return parse_cpuset(self.cpuset)

    def to_json(self) -> str:
        out: dict[str, Any] = {}
        if self.cpuset:
            out["cpuset"] = self.cpuset
        if self.numa_node_resources:
            out["numaNodeResources"] = [
                {"node": r.node, "resources": dict(r.resources)} for r in self.numa_node_resources
            ]
        return json.dumps(out, separators=(",", ":"))


#: the status of a pod without the annotation (one value: it is frozen, and most pods have none)
NO_RESOURCE_STATUS: Final = ResourceStatus()


def resource_status_of(pod: Mapping[str, Any]) -> ResourceStatus:
    """The pod's resource-status annotation; missing or malformed reads as empty."""
    text = annotations_of(pod).get(ANNOTATION_RESOURCE_STATUS)
    if not text:
        return NO_RESOURCE_STATUS
    try:
        raw = json.loads(text)
        cpuset = str(raw.get("cpuset") or "")
        parse_cpuset(cpuset)
        numa = tuple(
            NUMANodeResource(int(r["node"]), {str(k): str(v) for k, v in (r.get("resources") or {}).items()})
            for r in raw.get("numaNodeResources") or []
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return ResourceStatus()
    return ResourceStatus(cpuset, numa)

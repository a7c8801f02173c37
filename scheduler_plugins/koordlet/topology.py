"""The node's processors (cpu id, core, socket, NUMA node) and the CPU selection of the cpuset
suppress policy (`calculateBESuppressCPUSetPolicy` in `cpu_suppress.go`).

Processors come from the machine (`/sys/devices/system/cpu`), or, for `plan`, from a
NodeResourceTopology's `node.koordinator.sh/cpu-topology` annotation; without either, a node of
`capacity.cpu` processors, each its own core, on one socket and one NUMA node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.apis.cpuset import cpu_topology_of


@dataclass(frozen=True, order=True)
class CPUInfo:
    cpu: int
    core: int
    socket: int = 0
    node: int = 0


def processors_of_topology(topology: Mapping[str, Any] | None) -> list[CPUInfo] | None:
    """The processors of a NodeResourceTopology's cpu-topology annotation (read by the one parser,
    `policies.apis.cpuset.cpu_topology_of`); None when it has none or it is malformed."""
    cpus = cpu_topology_of(topology).cpus
    if not cpus:
        return None
    return sorted(CPUInfo(c.id, c.core, c.socket, c.node) for c in cpus)


def flat_processors(count: int) -> list[CPUInfo]:
    return [CPUInfo(i, i) for i in range(count)]


def _read_int(path: Path, default: int) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return default


def machine_processors(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> list[CPUInfo]:
    """The online processors of this machine from sysfs."""
    found = []
    for entry in sys_cpu.glob("cpu[0-9]*"):
        match = re.fullmatch(r"cpu(\d+)", entry.name)
        if not match:
            continue
        cpu = int(match.group(1))
        if (entry / "online").exists() and _read_int(entry / "online", 1) == 0:
            continue
        nodes = [int(n.name[4:]) for n in entry.glob("node[0-9]*")]
        found.append(
            CPUInfo(
                cpu,
                _read_int(entry / "topology" / "core_id", cpu),
                _read_int(entry / "topology" / "physical_package_id", 0),
                min(nodes, default=0),
            )
        )
    return sorted(found)


def select_cpus(processors: Sequence[CPUInfo], count: int) -> list[int]:
    """`count` processors: buckets per (NUMA node, socket), each sorted by (core, cpu), largest
    bucket first; round-robin over the buckets, taking from each a pair of sibling hyper-threads
    while two or more are needed (and its next two are siblings), else one CPU. Fewer processors
    than asked: the empty list (no write)."""
    if count <= 0 or len(processors) < count:
        return []
    grouped: dict[tuple[int, int], list[CPUInfo]] = {}
    for p in processors:
        grouped.setdefault((p.node, p.socket), []).append(p)
    buckets = [sorted(b, key=lambda p: (p.core, p.cpu)) for b in grouped.values()]
    buckets.sort(key=lambda b: (-len(b), b[0].cpu))
    chosen: list[int] = []
    need = count
    while need > 0:
        for bucket in buckets:
            if need == 0:
                break
            if not bucket:
                continue
            if need >= 2 and len(bucket) >= 2 and bucket[0].core == bucket[1].core:
                chosen.extend((bucket[0].cpu, bucket[1].cpu))
                del bucket[:2]
                need -= 2
            else:
                chosen.append(bucket.pop(0).cpu)
                need -= 1
    return sorted(chosen)

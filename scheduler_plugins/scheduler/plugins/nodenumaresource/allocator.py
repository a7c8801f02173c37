"""The CPU accumulator (Koordinator's cpu_accumulator.go, simplified): which logical CPUs of a
node a pod gets. Pure: a topology, the free CPUs and a request in, a CPU set (or None) out.

NUMA nodes are tried in the order of the node's NUMA allocate strategy: `MostAllocated` (the
default) packs, trying the NUMA node with the fewest free CPUs first; `LeastAllocated` and
`DistributeEvenly` spread, trying the one with the most first (ties: lower id).

* FullPCPUs: whole free physical cores, from one NUMA node when one has enough, else across NUMA
  nodes in order; only then the free threads of partly used cores.
* SpreadByPCPUs: one thread of each core before a second thread of any, from one NUMA node when one
  has enough free CPUs, else across NUMA nodes in order.
"""

from __future__ import annotations

from collections.abc import Iterable

from policies.cpuset import CPUTopology
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import FULL_PCPUS

MOST_ALLOCATED_STRATEGY = "MostAllocated"


def numa_order(
    topology: CPUTopology,
    free: frozenset[int],
    strategy: str = MOST_ALLOCATED_STRATEGY,
    allowed: Iterable[int] | None = None,
) -> list[int]:
    nodes = topology.numa_nodes() if allowed is None else sorted(set(allowed))
    count = {n: sum(1 for c in topology.cpus if c.node == n and c.id in free) for n in nodes}
    sign = 1 if strategy in ("", MOST_ALLOCATED_STRATEGY) else -1
    return sorted(nodes, key=lambda n: (sign * count[n], n))


def _cores(topology: CPUTopology, node: int) -> list[list[int]]:
    """The cores of one NUMA node, each as its CPU ids ascending, cores by their lowest CPU id."""
    cores: dict[tuple[int, int], list[int]] = {}
    for cpu in topology.cpus:
        if cpu.node == node:
            cores.setdefault((cpu.socket, cpu.core), []).append(cpu.id)
    return sorted((sorted(ids) for ids in cores.values()), key=lambda ids: ids[0])


def _full_pcpus(topology: CPUTopology, free: frozenset[int], n: int, order: list[int]) -> list[int] | None:
    def whole(node: int) -> list[list[int]]:
        return [ids for ids in _cores(topology, node) if all(i in free for i in ids)]

    for node in order:  # one NUMA node whose whole free cores suffice
        cores = whole(node)
        if sum(len(c) for c in cores) >= n:
            return [i for c in cores for i in c][:n]
    taken = [i for node in order for c in whole(node) for i in c][:n]
    if len(taken) < n:
        rest = [i for node in order for c in _cores(topology, node) for i in c if i in free and i not in taken]
        taken += rest[: n - len(taken)]
    return taken if len(taken) == n else None


def _spread(topology: CPUTopology, free: frozenset[int], n: int, nodes: list[int]) -> list[int]:
    cores = [[i for i in ids if i in free] for node in nodes for ids in _cores(topology, node)]
    cores = [c for c in cores if c]
    taken: list[int] = []
    depth = 0
    while len(taken) < n and any(len(c) > depth for c in cores):
        taken += [c[depth] for c in cores if len(c) > depth][: n - len(taken)]
        depth += 1
    return taken


def _spread_by_pcpus(topology: CPUTopology, free: frozenset[int], n: int, order: list[int]) -> list[int] | None:
    for node in order:
        if sum(1 for c in topology.cpus if c.node == node and c.id in free) >= n:
            return _spread(topology, free, n, [node])
    taken = _spread(topology, free, n, order)
    return taken if len(taken) == n else None


def allocate(
    topology: CPUTopology,
    free: frozenset[int],
    n: int,
    policy: str,
    strategy: str = "",
    allowed_numa: Iterable[int] | None = None,
) -> frozenset[int] | None:
    """`n` CPUs out of `free` by `policy` (FullPCPUs or SpreadByPCPUs), only on `allowed_numa`
    NUMA nodes when given; None when they do not fit."""
    if n <= 0:
        return frozenset()
    order = numa_order(topology, free, strategy, allowed_numa)
    chosen = (_full_pcpus if policy == FULL_PCPUS else _spread_by_pcpus)(topology, free, n, order)
    return frozenset(chosen) if chosen is not None else None

"""The CPU accumulator, ported from Koordinator's
`pkg/scheduler/plugins/nodenumaresource/cpu_accumulator.go` (`takeCPUs`): which logical CPUs of a
node a pod gets. Pure: a topology, the free CPUs and a request in, a CPU set (or None) out.

Ported without the CPU exclusive policy and with a max reference count of 1 (colocate implements
neither). The order of the steps is Koordinator's, and so are the results (its tests
`TestTakeFullPCPUs` and `TestTakeSpreadByPCPUs` are transcribed in our tests):

* FullPCPUs (and any policy on a machine with one thread per core): whole free cores of one NUMA
  node when the request fits one; else of one socket; else whole free sockets, the socket with the
  most free cores first, and what remains from the socket with the fewest free cores; else single
  CPUs in the order below.
* SpreadByPCPUs: one NUMA node that has a free thread on enough distinct cores, else one whose free
  CPUs suffice, one thread of each core before a second thread of any; the same for one socket;
  else single CPUs.

Sockets and NUMA nodes are tried in the order of the NUMA allocate strategy: `MostAllocated` (the
default) packs, trying the one with the fewest free CPUs that still fits first; any other strategy
spreads, trying the one with the most first (ties: lower id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from policies.apis.cpuset import CPUInfo, CPUTopology
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import FULL_PCPUS

MOST_ALLOCATED_STRATEGY = "MostAllocated"

_Core = tuple[int, int]  # (socket, core): Koordinator's CoreID, unique on the node


def numa_order(
    topology: CPUTopology,
    free: frozenset[int],
    strategy: str = MOST_ALLOCATED_STRATEGY,
    allowed: Iterable[int] | None = None,
) -> list[int]:
    """NUMA nodes by the strategy: fewest free CPUs first when packing, most first otherwise."""
    nodes = topology.numa_nodes() if allowed is None else sorted(set(allowed))
    count = {n: sum(1 for c in topology.cpus if c.node == n and c.id in free) for n in nodes}
    sign = 1 if _packs(strategy) else -1
    return sorted(nodes, key=lambda n: (sign * count[n], n))


def _packs(strategy: str) -> bool:
    return strategy in ("", MOST_ALLOCATED_STRATEGY)


def _core(cpu: CPUInfo) -> _Core:
    return (cpu.socket, cpu.core)


@dataclass
class _Accumulator:
    """cpuAccumulator: the CPUs still allocatable, how many are still needed, what is taken."""

    topology: CPUTopology
    allocatable: dict[int, CPUInfo]
    needed: int
    packs: bool
    by_id: dict[int, CPUInfo]
    result: list[int] = field(default_factory=list)

    @property
    def cpus_per_core(self) -> int:
        return self.topology.cpus_per_core

    @property
    def cpus_per_node(self) -> int:
        return len(self.topology.cpus) // max(1, len(self.topology.numa_nodes()))

    @property
    def cpus_per_socket(self) -> int:
        return len(self.topology.cpus) // max(1, len({c.socket for c in self.topology.cpus}))

    def take(self, cpus: Iterable[int]) -> None:
        for cpu in cpus:
            del self.allocatable[cpu]
            self.result.append(cpu)
            self.needed -= 1

    def needs(self, n: int) -> bool:
        return self.needed >= n

    def satisfied(self) -> bool:
        return self.needed < 1

    def _order(self, score: int) -> int:
        """A free-CPU count as a sort key: ascending when packing, descending when spreading."""
        return score if self.packs else -score

    def _cores(self) -> dict[_Core, list[int]]:
        cores: dict[_Core, list[int]] = {}
        for cpu in self.allocatable.values():
            cores.setdefault(_core(cpu), []).append(cpu.id)
        for ids in cores.values():
            ids.sort()
        return cores

    def _whole_cores_by(self, group: Callable[[CPUInfo], int]) -> dict[int, list[int]]:
        """The CPUs of the wholly free cores, grouped, cores in core-id order (sortCores)."""
        grouped: dict[int, list[int]] = {}
        for _, ids in sorted(self._cores().items()):
            if len(ids) == self.cpus_per_core:
                grouped.setdefault(group(self.allocatable[ids[0]]), []).extend(ids)
        return grouped

    def free_cores_in_node(self) -> list[list[int]]:
        """freeCoresInNode(filterFullFreeCore=true)."""
        socket_free: dict[int, int] = {}
        for cpu in self.allocatable.values():
            socket_free[cpu.socket] = socket_free.get(cpu.socket, 0) + 1
        grouped = self._whole_cores_by(lambda c: c.node)
        socket_of = {n: self.allocatable[ids[0]].socket for n, ids in grouped.items()}
        order = sorted(grouped, key=lambda n: (self._order(len(grouped[n])), self._order(socket_free[socket_of[n]]), n))
        return [grouped[n] for n in order]

    def free_cores_in_socket(self) -> list[list[int]]:
        """freeCoresInSocket(filterFullFreeCore=true)."""
        grouped = self._whole_cores_by(lambda c: c.socket)
        return [grouped[s] for s in sorted(grouped, key=lambda s: (self._order(len(grouped[s])), s))]

    def _one_per_core(self, ids: list[int]) -> list[int]:
        """extractCPU: the first free CPU of each core, in CPU order."""
        seen: set[_Core] = set()
        out = []
        for i in ids:
            core = _core(self.by_id[i])
            if core not in seen:
                seen.add(core)
                out.append(i)
        return out

    def free_cpus_in_node(self, one_per_core: bool) -> list[list[int]]:
        """freeCPUsInNode: nodes ordered by all their free CPUs, then their socket's."""
        nodes: dict[int, list[int]] = {}
        socket_free: dict[int, int] = {}
        for cpu in self.allocatable.values():
            nodes.setdefault(cpu.node, []).append(cpu.id)
            socket_free[cpu.socket] = socket_free.get(cpu.socket, 0) + 1
        node_free = {n: len(ids) for n, ids in nodes.items()}
        socket_of = {n: self.allocatable[ids[0]].socket for n, ids in nodes.items()}
        lists = {n: sorted(ids) for n, ids in nodes.items()}
        if one_per_core:
            lists = {n: self._one_per_core(ids) for n, ids in lists.items()}
        order = sorted(nodes, key=lambda n: (self._order(node_free[n]), self._order(socket_free[socket_of[n]]), n))
        return [lists[n] for n in order]

    def free_cpus_in_socket(self, one_per_core: bool) -> list[list[int]]:
        """freeCPUsInSocket: sockets ordered by the length of their (possibly one-per-core) list."""
        sockets: dict[int, list[int]] = {}
        for cpu in self.allocatable.values():
            sockets.setdefault(cpu.socket, []).append(cpu.id)
        lists = {s: sorted(ids) for s, ids in sockets.items()}
        if one_per_core:
            lists = {s: self._one_per_core(ids) for s, ids in lists.items()}
        return [lists[s] for s in sorted(lists, key=lambda s: (self._order(len(lists[s])), s))]

    def free_cpus(self) -> list[int]:
        """freeCPUs: cores ordered by the socket already holding most of the result, the socket's
        and the NUMA node's free CPUs (by strategy), the core's free CPUs (fewest first), socket, core."""
        cores = self._cores()
        socket_free: dict[int, int] = {}
        node_free: dict[int, int] = {}
        for cpu in self.allocatable.values():
            socket_free[cpu.socket] = socket_free.get(cpu.socket, 0) + 1
            node_free[cpu.node] = node_free.get(cpu.node, 0) + 1
        by_id = self.by_id
        colo: dict[int, int] = {}
        for taken in self.result:
            colo[by_id[taken].socket] = colo.get(by_id[taken].socket, 0) + 1

        def key(core: _Core) -> tuple[int, int, int, int, int, int]:
            first = self.allocatable[cores[core][0]]
            socket, node = first.socket, first.node
            return (
                -colo.get(socket, 0),
                self._order(socket_free[socket]),
                self._order(node_free[node]),
                len(cores[core]),
                socket,
                core[1],
            )

        return [i for core in sorted(cores, key=key) for i in cores[core]]

    def spread(self, cpus: list[int]) -> list[int]:
        """spreadCPUs: one CPU of each core, then a second of each, keeping the given order."""
        if len(cpus) <= self.cpus_per_core:
            return cpus
        by_id = self.by_id
        out: list[int] = []
        pending = list(cpus)
        while pending:
            seen: set[_Core] = set()
            later = []
            for cpu in pending:
                core = _core(by_id[cpu])
                if core in seen:
                    later.append(cpu)
                else:
                    seen.add(core)
                    out.append(cpu)
            pending = later
        return out


def _take_whole_cores(acc: _Accumulator) -> bool:
    """The FullPCPUs steps of takeCPUs; True when the request is satisfied."""
    if acc.needed <= acc.cpus_per_node:
        for cpus in acc.free_cores_in_node():
            if len(cpus) >= acc.needed:
                acc.take(cpus[: acc.needed])
                return True
    if acc.needed <= acc.cpus_per_socket:
        for cpus in acc.free_cores_in_socket():
            if len(cpus) >= acc.needed:
                acc.take(cpus[: acc.needed])
                return True
    # Too big for one socket: whole sockets, the socket with the most free cores first ...
    unsatisfied: list[list[int]] = []
    for cpus in sorted(acc.free_cores_in_socket(), key=len, reverse=True):
        if not acc.needs(len(cpus)):
            unsatisfied.append(cpus)
            continue
        acc.take(cpus)
        if acc.satisfied():
            return True
    # ... then whole cores from the socket with the fewest free cores.
    per_core = acc.cpus_per_core
    if acc.needs(per_core):
        for cpus in sorted(unsatisfied, key=len):
            for i in range(0, len(cpus), per_core):
                acc.take(cpus[i : i + per_core])
                if acc.satisfied():
                    return True
                if not acc.needs(per_core):
                    break
    return False


def _take_spread(acc: _Accumulator) -> bool:
    """The SpreadByPCPUs steps of takeCPUs; True when the request is satisfied."""
    steps = []
    if acc.needed <= acc.cpus_per_node:
        steps.append(acc.free_cpus_in_node)
    if acc.needed <= acc.cpus_per_socket:
        steps.append(acc.free_cpus_in_socket)
    for step in steps:
        for one_per_core in (True, False):
            for cpus in step(one_per_core):
                if len(cpus) >= acc.needed:
                    acc.take(acc.spread(cpus)[: acc.needed])
                    return True
    return False


def take_cpus(
    topology: CPUTopology, free: frozenset[int], n: int, policy: str, strategy: str = ""
) -> frozenset[int] | None:
    """takeCPUs: `n` CPUs out of `free` by `policy`; None when they do not fit."""
    by_id = {c.id: c for c in topology.cpus}
    acc = _Accumulator(topology, {i: by_id[i] for i in sorted(free) if i in by_id}, n, _packs(strategy), by_id)
    if acc.satisfied():
        return frozenset()
    if acc.needed > len(acc.allocatable):
        return None
    full = policy == FULL_PCPUS
    if (full or acc.cpus_per_core == 1) and _take_whole_cores(acc):
        return frozenset(acc.result)
    if not full and _take_spread(acc):
        return frozenset(acc.result)
    for cpu in acc.spread(acc.free_cpus()):
        if acc.needs(1):
            acc.take([cpu])
        if acc.satisfied():
            return frozenset(acc.result)
    return None


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
    if allowed_numa is not None:
        nodes = set(allowed_numa)
        free = frozenset(c.id for c in topology.cpus if c.node in nodes and c.id in free)
    return take_cpus(topology, free, n, policy, strategy)

"""The CPU accumulator against Koordinator's own cases: `TestTakeFullPCPUs`,
`TestTakeFullPCPUsWithNUMALeastAllocated`, `TestTakeSpreadByPCPUs` and
`TestTakeSpreadByPCPUsWithNUMALeastAllocated` in
`pkg/scheduler/plugins/nodenumaresource/cpu_accumulator_test.go`, transcribed case by case."""

from __future__ import annotations

import pytest

from policies.apis.cpuset import CPUInfo, CPUTopology, parse_cpuset
from scheduler_plugins.scheduler.plugins.nodenumaresource.allocator import allocate


def build_topology(sockets: int, nodes_per_socket: int, cores_per_node: int, cpus_per_core: int) -> CPUTopology:
    """buildCPUTopologyForTest: CPU, core and NUMA ids counted up socket by socket."""
    cpus = []
    node = core = cpu = 0
    for s in range(sockets):
        for _ in range(nodes_per_socket):
            for _ in range(cores_per_node):
                for _ in range(cpus_per_core):
                    cpus.append(CPUInfo(cpu, core, s, node))
                    cpu += 1
                core += 1
            node += 1
    return CPUTopology(tuple(cpus))


# (name, topology, allocated, needed, want)
FULL_PCPUS_MOST_ALLOCATED = [
    ("allocate on non-NUMA node", (1, 1, 4, 2), "", 2, "0-1"),
    ("with allocated cpus", (1, 1, 4, 2), "0-1", 2, "2-3"),
    ("allocate whole socket", (2, 1, 4, 2), "", 8, "0-7"),
    ("allocate across socket", (2, 1, 4, 2), "", 12, "0-11"),
    ("allocate whole socket with partially-allocated socket", (2, 1, 4, 2), "0-1", 8, "8-15"),
    ("allocate in the smallest idle socket", (2, 2, 4, 2), "0-5,16-23", 6, "24-29"),
    ("allocate the most of CPUs on the same socket", (2, 2, 4, 2), "0-5,16-23", 12, "6-15,24-25"),
    ("allocate from first socket", (2, 2, 4, 2), "0-3,8-11", 4, "4-7"),
    ("allocate with less spread cpus", (2, 2, 2, 2), "0,2,4,8,12", 4, "10-11,14-15"),
    ("allocate with the most spread cpus", (2, 2, 2, 2), "0,2,4,8,10,12", 6, "5-7,13-15"),
    (
        "allocate with the most spread cpus on the smallest idle cpus socket",
        (2, 2, 2, 2),
        "0,2,4,8-10,12",
        6,
        "6-7,11,13-15",
    ),
]

FULL_PCPUS_LEAST_ALLOCATED = [
    ("allocate on non-NUMA node", (1, 1, 4, 2), "", 2, "0-1"),
    ("with allocated cpus", (1, 1, 4, 2), "0-1", 2, "2-3"),
    ("allocate whole socket", (2, 1, 4, 2), "", 8, "0-7"),
    ("allocate across socket", (2, 1, 4, 2), "", 12, "0-11"),
    ("allocate whole socket with partially-allocated socket", (2, 1, 4, 2), "0-1", 8, "8-15"),
    ("allocate in the most idle socket", (2, 2, 4, 2), "0-5,16-23", 6, "8-13"),
    ("allocate the most of CPUs on the same socket", (2, 2, 4, 2), "0-5,16-23", 12, "6-15,24-25"),
    ("allocate from second socket", (2, 2, 4, 2), "0-3,8-11", 4, "16-19"),
    ("allocate with less spread cpus", (2, 2, 2, 2), "0,2,4,8,12", 4, "10-11,14-15"),
    ("allocate with the less spread cpus 2", (2, 2, 2, 2), "0,2,4,8,10,12", 6, "1,3,6-7,14-15"),
    (
        "allocate with the most spread cpus on the most idle cpus socket 3",
        (2, 2, 4, 2),
        "0,2,4,8-10,12",
        6,
        "16-21",
    ),
]

SPREAD_BY_PCPUS_MOST_ALLOCATED = [
    ("allocate on non-NUMA node", (1, 1, 4, 2), "", 4, "0,2,4,6"),
    ("allocate satisfied the partially-allocated socket", (2, 1, 4, 2), "0,2", 4, "1,3,4,6"),
    ("allocate cpus on full-free socket", (2, 1, 4, 2), "0-3", 4, "8,10,12,14"),
    ("allocate most of CPUs in the same socket and overlapped-cores", (2, 1, 4, 2), "0,2", 6, "1,3-7"),
]

SPREAD_BY_PCPUS_LEAST_ALLOCATED = [
    ("allocate on non-NUMA node", (1, 1, 4, 2), "", 4, "0,2,4,6"),
    ("allocate satisfied the partially-allocated socket", (2, 1, 4, 2), "0,2", 4, "8,10,12,14"),
    ("allocate cpus on full-free socket", (2, 1, 4, 2), "0-3", 4, "8,10,12,14"),
    ("allocate most of CPUs in the same socket and overlapped-cores", (2, 1, 4, 2), "0,2", 6, "8-12,14"),
]

CASES = [
    pytest.param(policy, strategy, *case[1:], id=f"{go_test}/{case[0]}")
    for go_test, policy, strategy, cases in (
        ("TestTakeFullPCPUs", "FullPCPUs", "MostAllocated", FULL_PCPUS_MOST_ALLOCATED),
        ("TestTakeFullPCPUsWithNUMALeastAllocated", "FullPCPUs", "LeastAllocated", FULL_PCPUS_LEAST_ALLOCATED),
        ("TestTakeSpreadByPCPUs", "SpreadByPCPUs", "MostAllocated", SPREAD_BY_PCPUS_MOST_ALLOCATED),
        (
            "TestTakeSpreadByPCPUsWithNUMALeastAllocated",
            "SpreadByPCPUs",
            "LeastAllocated",
            SPREAD_BY_PCPUS_LEAST_ALLOCATED,
        ),
    )
    for case in cases
]


@pytest.mark.parametrize("policy,strategy,shape,allocated,needed,want", CASES)
def test_cpus_are_taken_as_koordinator_takes_them(policy, strategy, shape, allocated, needed, want):
    topology = build_topology(*shape)
    free = frozenset(c.id for c in topology.cpus) - parse_cpuset(allocated)
    assert allocate(topology, free, needed, policy, strategy) == parse_cpuset(want)


def test_a_request_larger_than_the_free_cpus_fails():
    topology = build_topology(2, 1, 4, 2)
    assert allocate(topology, frozenset(range(16)), 17, "FullPCPUs") is None

"""The CPU accumulator and the annotations, on a 2-socket topology (docs/scheduler.md)."""

import json

import pytest

from policies.apis.cpuset import CPUSetError, cpu_topology_of, format_cpuset, parse_cpuset, resource_status_of
from scheduler_plugins.scheduler.plugins.nodenumaresource.allocator import allocate
from tests.scheduler_plugins.scheduler.nodenumaresource.topologies import make_nrt
from tests.support.builders import make_pod

# 2 sockets x 4 cores x 2 threads: core k of socket s holds CPUs 4s+k and 8+4s+k
TOPOLOGY = cpu_topology_of(make_nrt("n"))
ALL = frozenset(range(16))


def test_cpusets_parse_and_print_as_the_kernel_does():
    assert parse_cpuset("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert format_cpuset({11, 0, 1, 2, 3, 8, 10}) == "0-3,8,10-11"
    assert parse_cpuset("") == frozenset() and format_cpuset([]) == ""
    with pytest.raises(CPUSetError):
        parse_cpuset("3-1")


def test_the_resource_status_annotation_reads_as_koordinator_writes_it():
    pod = make_pod(
        annotations={
            "scheduling.koordinator.sh/resource-status": json.dumps(
                {"cpuset": "0-3", "numaNodeResources": [{"node": 0, "resources": {"cpu": "4", "memory": "8Gi"}}]}
            )
        }
    )
    status = resource_status_of(pod)
    assert status.cpus() == {0, 1, 2, 3}
    assert status.numa_node_resources[0].node == 0 and status.numa_node_resources[0].resources["memory"] == "8Gi"
    assert json.loads(status.to_json()) == {
        "cpuset": "0-3",
        "numaNodeResources": [{"node": 0, "resources": {"cpu": "4", "memory": "8Gi"}}],
    }
    broken = make_pod(annotations={"scheduling.koordinator.sh/resource-status": "{not json"})
    assert resource_status_of(broken).cpuset == ""


def test_full_pcpus_takes_whole_cores_on_one_numa_node():
    assert TOPOLOGY.cpus_per_core == 2
    assert allocate(TOPOLOGY, ALL, 4, "FullPCPUs") == {0, 1, 8, 9}  # cores 0 and 1 of socket 0


def test_full_pcpus_packs_onto_the_busier_numa_node_by_default():
    free = ALL - {0, 8}  # core 0 of socket 0 is taken
    assert allocate(TOPOLOGY, free, 4, "FullPCPUs") == {1, 2, 9, 10}
    assert allocate(TOPOLOGY, free, 4, "FullPCPUs", strategy="LeastAllocated") == {4, 5, 12, 13}


def test_full_pcpus_prefers_whole_cores_over_free_threads_of_used_cores():
    free = ALL - {0, 1, 2}  # socket 0: cores 0-2 half used, core 3 whole
    assert allocate(TOPOLOGY, free, 2, "FullPCPUs") == {3, 11}


def test_full_pcpus_spans_numa_nodes_only_when_one_is_not_enough():
    assert allocate(TOPOLOGY, ALL, 10, "FullPCPUs") == {0, 1, 2, 3, 8, 9, 10, 11, 4, 12}
    assert allocate(TOPOLOGY, ALL, 17, "FullPCPUs") is None


def test_spread_by_pcpus_takes_one_thread_per_core_first():
    assert allocate(TOPOLOGY, ALL, 4, "SpreadByPCPUs") == {0, 1, 2, 3}
    assert allocate(TOPOLOGY, ALL, 6, "SpreadByPCPUs") == {0, 1, 2, 3, 8, 9}


def test_allocation_stays_on_the_admitted_numa_nodes():
    assert allocate(TOPOLOGY, ALL, 4, "FullPCPUs", allowed_numa=[1]) == {4, 5, 12, 13}
    assert allocate(TOPOLOGY, ALL, 10, "FullPCPUs", allowed_numa=[1]) is None

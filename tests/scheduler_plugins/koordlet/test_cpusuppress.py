"""CPUSuppress (Koordinator's `cpu_suppress.go`): the suppress formula, the cpuset and cfsQuota
policies, the recovery, and the topology-aware CPU selection (with its properties)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.apis.cpuset import parse_cpuset
from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cpusuppress import CPUSuppress, suppress_milli
from scheduler_plugins.koordlet.topology import CPUInfo, select_cpus
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod

BE_QOS = "kubepods/besteffort"


def node(cpu: str = "20", allocatable: str | None = None, **kw: Any) -> dict[str, Any]:
    return make_node(
        "n1", capacity={"cpu": cpu, "memory": "64Gi"}, allocatable={"cpu": allocatable or cpu, "memory": "64Gi"}, **kw
    )


def slo(**threshold: Any) -> dict[str, Any]:
    return make_node_slo("n1", threshold={"enable": True, **threshold})


LS = make_pod("web", node="n1", requests={"cpu": "8"})
BE = make_pod("batch", node="n1", qos="BE", requests={"kubernetes.io/batch-cpu": "2000"}, uid=True)
BE_UID = BE["metadata"]["uid"]
C1 = container_hash("c1")
BE["status"] = {"containerStatuses": [{"name": "main", "containerID": f"containerd://{C1}"}]}


def test_the_spec_example_leaves_four_cores_to_be() -> None:
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=70),
        [LS, BE],
        usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)}),
    )
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 4000  # type: ignore[union-attr]


def test_usage_of_a_pod_the_node_does_not_know_counts_as_non_be() -> None:
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=70),
        [BE],
        usage(12, pods={"default/ghost": (8, 0), "default/batch": (2, 0)}),
    )
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 4000  # type: ignore[union-attr]


def test_kubelet_reserved_cpu_is_the_floor_of_system_usage() -> None:
    inp = round_input(
        node("20", allocatable="16"),
        slo(cpuSuppressThresholdPercent=70),
        [LS, BE],
        usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)}),
    )
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 14000 - 8000 - 4000


def test_non_be_host_applications_are_subtracted_be_ones_are_not() -> None:
    apps = [
        {"name": "agent", "qos": "LS"},
        {"name": "crawler", "qos": "BE", "cgroupPath": {"base": "KubepodsBesteffort"}},
    ]
    threshold = {"enable": True, "cpuSuppressThresholdPercent": 70}
    inp = round_input(
        node(),
        make_node_slo("n1", threshold=threshold, host_applications=apps),
        [LS, BE],
        usage(12, pods={"default/web": (8, 0), "default/batch": (1, 0)}, apps={"agent": (1, 0), "crawler": (1, 0)}),
    )
    # system = 12 - 9 - 2 = 1; 14 - 8 - 1 (agent) - 1 = 4
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 4000  # type: ignore[union-attr]


def test_the_min_percent_is_a_floor() -> None:
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=50, cpuSuppressMinPercent=20),
        [LS],
        usage(18, pods={"default/web": (16, 0)}),
    )
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 4000  # type: ignore[union-attr]


def test_a_node_without_capacity_suppresses_to_zero() -> None:
    inp = round_input(make_node("n1"), slo(), [LS], usage(1))
    assert suppress_milli(inp, inp.state.node_slo.threshold) == 0  # type: ignore[union-attr]


def strategy(gates: str = "") -> CPUSuppress:
    return CPUSuppress(StrategyOptions(koordlet_gates(gates)))


def test_cpuset_policy_writes_the_be_dirs_and_restores_the_quota_once() -> None:
    s = strategy()
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=70),
        [LS, BE],
        usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)}),
    )
    result = s.round(inp)
    assert result.status == {"policy": "cpuset", "suppressMilliCPU": 4000, "cpus": "0-3"}
    assert [(w.cgroup, w.resource.name, w.value) for w in result.writes] == [
        (BE_QOS, "cpuset.cpus", "0-3"),
        (f"{BE_QOS}/pod{BE_UID}", "cpuset.cpus", "0-3"),
        (f"{BE_QOS}/pod{BE_UID}/{C1}", "cpuset.cpus", "0-3"),
        (BE_QOS, "cpu.cfs_quota_us", -1),
    ]
    assert [w.resource.name for w in s.round(inp).writes] == ["cpuset.cpus"] * 3


def test_cpuset_never_drops_below_two_cpus_and_grows_at_most_ten_percent_a_round() -> None:
    s = strategy()
    busy = round_input(node(), slo(cpuSuppressThresholdPercent=70), [LS], usage(14, pods={"default/web": (14, 0)}))
    assert s.round(busy).status["cpus"] == "0-1"
    idle = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=70),
        [LS],
        usage(1, pods={"default/web": (0, 0)}),
        current={(BE_QOS, "cpuset.cpus"): "0-1"},
    )
    assert s.round(idle).status["cpus"] == "0-3"  # 2 + ceil(20 × 0.1)


def test_cpuset_leaves_out_reserved_system_and_lse_cpus_and_shares_lsr_cpus_pro_rata() -> None:
    lse = make_pod(
        "lse",
        node="n1",
        qos="LSE",
        annotations={"scheduling.koordinator.sh/resource-status": json.dumps({"cpuset": "4-7"})},
    )
    lsr = make_pod(
        "lsr",
        node="n1",
        qos="LSR",
        annotations={"scheduling.koordinator.sh/resource-status": json.dumps({"cpuset": "8-11"})},
    )
    n = node("16", annotations={"node.koordinator.sh/reservation": json.dumps({"cpus": "0-1"})})
    inp = round_input(
        n, slo(cpuSuppressThresholdPercent=100), [lse, lsr], usage(0), processors=[CPUInfo(i, i) for i in range(16)]
    )
    result = strategy().round(inp)
    # candidates: 2-3, 8-15 (10 CPUs); lsr 8-11 is 4 of them
    assert parse_cpuset(result.status["cpus"]) == {2, 3, *range(8, 16)}  # every candidate: 2-3 and 8-15
    few = round_input(
        n, slo(cpuSuppressThresholdPercent=37), [lse, lsr], usage(0), processors=[CPUInfo(i, i) for i in range(16)]
    )
    chosen = parse_cpuset(strategy().round(few).status["cpus"])
    # 16 × 37 % − 2 reserved = 3.92 cores: 4 CPUs, 4 × 4 // 10 = 1 of them from the LSR-bound 8-11
    assert len(chosen) == 4 and len(chosen & {8, 9, 10, 11}) == 1 and not chosen & {0, 1, 4, 5, 6, 7}


def test_cfs_quota_policy_writes_the_be_quota_and_restores_the_cpusets() -> None:
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=70, cpuSuppressPolicy="cfsQuota"),
        [LS, BE],
        usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)}),
    )
    result = strategy().round(inp)
    assert result.status["cfsQuota"] == 400_000
    assert (result.writes[0].cgroup, result.writes[0].resource, result.writes[0].value) == (
        BE_QOS,
        r.CPU_CFS_QUOTA,
        400_000,
    )
    assert {w.value for w in result.writes[1:]} == {"0-19"}


def test_cfs_quota_skips_small_changes_and_steps_large_increases() -> None:
    def quota(current: int, node_used: float) -> int | None:
        inp = round_input(
            node(),
            slo(cpuSuppressThresholdPercent=70, cpuSuppressPolicy="cfsQuota"),
            [LS],
            usage(node_used, pods={"default/web": (node_used, 0)}),
            current={(BE_QOS, "cpu.cfs_quota_us"): current},
        )
        return strategy().round(inp).status["cfsQuota"]  # type: ignore[no-any-return]

    assert quota(400_000, 10) is None  # wants 400000: |Δ| < 20 cores × 1 %
    assert quota(200_000, 2) == 200_000 + 200_000  # wants 1.2 M: +10 % of 20 cores per round
    assert quota(-1, 2) == 1_200_000  # from unlimited: no step


def test_cfs_quota_has_a_floor_of_2000() -> None:
    inp = round_input(
        node(),
        slo(cpuSuppressThresholdPercent=10, cpuSuppressPolicy="cfsQuota"),
        [LS],
        usage(16, pods={"default/web": (16, 0)}),
        current={(BE_QOS, "cpu.cfs_quota_us"): 2000},
    )
    result = strategy().round(inp)
    assert result.status["cfsQuota"] == 2000


def test_disabled_by_node_slo_recovers_quota_and_cpusets() -> None:
    inp = round_input(node(), make_node_slo("n1", threshold={"enable": False}), [BE], usage(1))
    result = strategy().round(inp)
    assert result.status["reason"] == "disabled by NodeSLO"
    assert (BE_QOS, -1) in [(w.cgroup, w.value) for w in result.writes]
    assert {w.value for w in result.writes if w.resource is r.CPUSET_CPUS} == {"0-19"}


def test_missing_node_slo_counts_as_disabled() -> None:
    assert strategy().round(round_input(node(), None, [BE], usage(1))).status["reason"] == "disabled by NodeSLO"


def test_the_gate_turns_the_strategy_off() -> None:
    assert strategy().enabled() and not strategy("BECPUSuppress=false").enabled()


# --- the CPU selection ------------------------------------------------------------------------------


def two_socket_ht(sockets: int = 2, cores: int = 4) -> list[CPUInfo]:
    """Linux numbering: cpu i and i + N are siblings of one core."""
    n = sockets * cores
    return [CPUInfo(cpu, cpu % n, (cpu % n) // cores, (cpu % n) // cores) for cpu in range(2 * n)]


def test_selection_takes_sibling_pairs_round_robin_over_numa_buckets() -> None:
    assert select_cpus(two_socket_ht(), 4) == [0, 4, 8, 12]  # (0,8) from socket 0, (4,12) from socket 1
    assert select_cpus(two_socket_ht(), 3) == [0, 4, 8]


def test_selection_refuses_more_than_there_is() -> None:
    assert select_cpus(two_socket_ht(1, 1), 3) == []


topologies = st.builds(two_socket_ht, st.integers(1, 3), st.integers(1, 6))


@settings(max_examples=200, deadline=None)
@given(topologies, st.integers(0, 40))
def test_selection_never_returns_more_than_asked_nor_a_cpu_twice(processors: list[CPUInfo], count: int) -> None:
    chosen = select_cpus(processors, count)
    assert len(chosen) == len(set(chosen))
    assert len(chosen) == (count if count <= len(processors) else 0)
    assert set(chosen) <= {p.cpu for p in processors}


@settings(max_examples=200, deadline=None)
@given(topologies, st.integers(2, 40))
def test_selection_takes_whole_cores_first(processors: list[CPUInfo], count: int) -> None:
    chosen = select_cpus(processors, count)
    if not chosen:
        return
    core_of = {p.cpu: (p.socket, p.core) for p in processors}
    cores = [core_of[c] for c in chosen]
    split = sum(1 for core in set(cores) if cores.count(core) == 1)
    assert split <= count % 2  # at most the odd one out is a lone hyper-thread


@settings(max_examples=200, deadline=None)
@given(topologies, st.integers(1, 40))
def test_selection_spreads_over_numa_buckets(processors: list[CPUInfo], count: int) -> None:
    chosen = select_cpus(processors, count)
    if not chosen:
        return
    nodes = {p.cpu: p.node for p in processors}
    per_node = [sum(1 for c in chosen if nodes[c] == n) for n in set(nodes.values())]
    assert max(per_node) - min(per_node) <= 2


def test_a_replaced_node_is_read_again() -> None:
    """The strategy keeps the Node's capacity and reservation while the Node is the very object
    read; an informer replaces a Node that changes, so the next round reads the new one."""
    s = strategy()
    pods = usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)})
    threshold = slo(cpuSuppressThresholdPercent=70)
    first = node("20")
    assert s.round(round_input(first, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 4000
    assert s.round(round_input(first, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 4000
    reserved = node("20", allocatable="16")  # kubelet reserves 4 CPUs
    assert s.round(round_input(reserved, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 2000
    annotated = node("20", annotations={"node.koordinator.sh/reservation": json.dumps({"resources": {"cpu": "6"}})})
    assert s.round(round_input(annotated, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 0
    bigger = node("40")
    assert s.round(round_input(bigger, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 18000
    assert s.round(round_input(first, threshold, [LS, BE], pods)).status["suppressMilliCPU"] == 4000

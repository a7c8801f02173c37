"""CgroupReconcile and CPUBurst (docs/koordlet.md): the values each writes, and where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cgroupreconcile import CgroupReconcile, memory_high
from scheduler_plugins.koordlet.strategies.cpuburst import CPUBurst
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod, pod_uid

GI = 1024**3
NODE = make_node("n1", capacity={"cpu": "10", "memory": "100Gi"}, allocatable={"cpu": "10", "memory": "100Gi"})


def running(pod: dict[str, Any], uid: str, cid: str = "c1") -> dict[str, Any]:
    pod["metadata"]["uid"] = pod_uid(uid)
    pod["status"] = {"containerStatuses": [{"name": "main", "containerID": f"containerd://{container_hash(cid)}"}]}
    return pod


C1 = container_hash("c1")


def writes_of(result: Any, cgroup: str) -> dict[str, int | str]:
    return {w.resource.name: w.value for w in result.writes if w.cgroup == cgroup}


LS_POD = running(
    make_pod("web", node="n1", qos="LS", requests={"cpu": "1", "memory": "4Gi"}, limits={"cpu": "2", "memory": "8Gi"}),
    "ls",
)
BE_POD = running(
    make_pod(
        "batch",
        node="n1",
        qos="BE",
        requests={"kubernetes.io/batch-cpu": "1500", "kubernetes.io/batch-memory": "2Gi"},
        limits={"kubernetes.io/batch-cpu": "3000", "kubernetes.io/batch-memory": "2Gi"},
    ),
    "be",
)
QOS = {
    "lsClass": {
        "memoryQOS": {
            "enable": True,
            "minLimitPercent": 50,
            "lowLimitPercent": 25,
            "throttlingPercent": 80,
            "priorityEnable": 1,
            "priority": 6,
        }
    },
    "beClass": {"cpuQOS": {"enable": True}},
}


def reconcile(pods: list[dict[str, Any]], qos: dict[str, Any] | None = QOS, **kw: Any) -> Any:
    return CgroupReconcile(StrategyOptions(koordlet_gates("CgroupReconcile=true"))).round(
        round_input(NODE, make_node_slo("n1", resource_qos=qos), pods, usage(), **kw)
    )


def test_memory_qos_of_an_ls_pod_at_pod_and_container_level() -> None:
    result = reconcile([LS_POD])
    pod = writes_of(result, f"kubepods/burstable/pod{pod_uid('ls')}")
    assert (
        pod["memory.min"],
        pod["memory.low"],
        pod["memory.wmark_ratio"],
        pod["memory.wmark_min_adj"],
        pod["memory.use_priority_oom"],
        pod["memory.priority"],
    ) == (2 * GI, 2 * GI, 95, -25, 1, 6)
    container = writes_of(result, f"kubepods/burstable/pod{pod_uid('ls')}/{C1}")
    # request + (limit − request) × 80 %, floored to a page
    assert container["memory.high"] == (4 * GI + 4 * GI * 80 // 100) // 4096 * 4096 == 7_730_937_856
    burstable = writes_of(result, "kubepods/burstable")
    assert (burstable["memory.min"], burstable["memory.low"]) == (2 * GI, 2 * GI)


def test_a_disabled_class_writes_the_none_values() -> None:
    result = reconcile(
        [running(make_pod("x", node="n1", qos="LSR", requests={"memory": "1Gi"}, limits={"memory": "1Gi"}), "lsr")]
    )
    pod = writes_of(result, f"kubepods/burstable/pod{pod_uid('lsr')}")
    assert (pod["memory.min"], pod["memory.low"], pod["memory.wmark_ratio"], pod["memory.wmark_scale_factor"]) == (
        0,
        0,
        0,
        50,
    )
    assert writes_of(result, f"kubepods/burstable/pod{pod_uid('lsr')}/{C1}")["memory.high"] == r.MAX_INT64


def test_throttling_without_a_limit_uses_node_allocatable() -> None:
    assert memory_high(GI, 0, 10 * GI, 50) == (GI + 9 * GI // 2) // 4096 * 4096


def test_the_pod_annotation_overrides_the_class() -> None:
    pod = running(
        make_pod(
            "web2",
            node="n1",
            qos="LS",
            requests={"memory": "4Gi"},
            annotations={"koordinator.sh/memoryQOS": json.dumps({"minLimitPercent": 100})},
        ),
        "ls2",
    )
    assert writes_of(reconcile([pod]), f"kubepods/burstable/pod{pod_uid('ls2')}")["memory.min"] == 4 * GI


def test_be_cpu_shares_and_quota_from_batch_cpu_and_group_identity_from_cpu_qos() -> None:
    result = reconcile([BE_POD])
    pod = writes_of(result, f"kubepods/besteffort/pod{pod_uid('be')}")
    assert (pod["cpu.shares"], pod["cpu.cfs_quota_us"], pod["cpu.bvt_warp_ns"], pod["cpu.idle"]) == (
        1536,
        300_000,
        -1,
        0,
    )
    assert writes_of(result, f"kubepods/besteffort/pod{pod_uid('be')}/{C1}")["cpu.shares"] == 1536
    assert writes_of(result, "kubepods/besteffort")["cpu.bvt_warp_ns"] == -1


def test_no_resource_qos_strategy_means_nothing_to_reconcile() -> None:
    result = reconcile([BE_POD], qos=None)
    assert not result.writes and "resourceQOSStrategy" in result.status["reason"]


def test_v2_systemd_file_names_and_values() -> None:
    layout = CgroupLayout(Path("/"), CgroupVersion.V2, CgroupDriver.SYSTEMD)
    result = reconcile([BE_POD], layout=layout)
    rendered = [w.as_dict(layout) for w in result.writes]
    pod_dir = f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{pod_uid('be').replace('-', '_')}.slice"
    assert {
        "strategy": "CgroupReconcile",
        "cgroup": pod_dir,
        "file": "cpu.weight",
        "value": str(r.shares_to_weight(1536)),
    } in rendered
    assert {"strategy": "CgroupReconcile", "cgroup": pod_dir, "file": "cpu.max", "value": "300000 100000"} in rendered
    assert {
        "strategy": "CgroupReconcile",
        "cgroup": f"{pod_dir}/cri-containerd-{C1}.scope",
        "file": "memory.high",
        "value": "max",
    } in rendered


def burst(policy: str, node_cpu: float) -> Any:
    return CPUBurst(StrategyOptions(koordlet_gates(""))).round(
        round_input(NODE, make_node_slo("n1", cpu_burst={"policy": policy}), [LS_POD], usage(node_cpu))
    )


def test_cpu_burst_writes_the_burst_budget_of_limited_ls_containers() -> None:
    container = writes_of(burst("cpuBurstOnly", 1), f"kubepods/burstable/pod{pod_uid('ls')}/{C1}")
    assert container == {"cpu.cfs_burst_us": 200_000 * 1000 // 100}


def test_cfs_quota_burst_steps_down_when_the_share_pool_is_busy() -> None:
    """Scaling is gradual (tests/.../test_cpuburst_koordinator.py has Koordinator's cases): an
    overloaded share pool takes a boosted quota down by a fifth, never below the limit's."""
    current = {
        (f"kubepods/burstable/pod{pod_uid('ls')}/{C1}", "cpu.cfs_quota_us"): 600_000,
        (f"kubepods/burstable/pod{pod_uid('ls')}", "cpu.cfs_quota_us"): 600_000,
    }
    busy = CPUBurst(StrategyOptions(koordlet_gates(""))).round(
        round_input(
            NODE, make_node_slo("n1", cpu_burst={"policy": "cfsQuotaBurstOnly"}), [LS_POD], usage(18), current=current
        )
    )
    assert writes_of(busy, f"kubepods/burstable/pod{pod_uid('ls')}/{C1}")["cpu.cfs_quota_us"] == 480_000
    assert writes_of(busy, f"kubepods/burstable/pod{pod_uid('ls')}")["cpu.cfs_quota_us"] == 480_000


def test_cpu_burst_policy_none_resets_burst_to_zero() -> None:
    """Koordinator writes 0 (and the limit's quota) for a pod whose policy is none."""
    result = burst("none", 1)
    assert writes_of(result, f"kubepods/burstable/pod{pod_uid('ls')}/{C1}") == {"cpu.cfs_burst_us": 0}

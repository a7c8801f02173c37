"""CPUBurst against Koordinator's own cases: `TestCPUBurst_applyCFSQuotaBurst` and
`Test_burstLimiter_Allow` in `pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst_test.go`,
transcribed. Koordinator's throttled metric (the last share of throttled periods) becomes two
`cpu.stat` samples a round apart; its node state comes from the node's usage (20 CPUs, share
pool threshold 50 %: idle below 45 %, cooling from 45 %, overload from 50 %)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cpuburst import BurstLimiter, CPUBurst
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod

NODE = make_node("n1", capacity={"cpu": "20", "memory": "100Gi"}, allocatable={"cpu": "20", "memory": "100Gi"})
UID = "7e57c0de-0000-4000-8000-000000000001"  # test-pod-1 (the agent needs a UUID)
POD_DIR = f"kubepods/burstable/pod{UID}"
NODE_CPU = {"idle": 1, "cooling": 9.5, "overload": 12}
AUTO = {"policy": "auto", "cpuBurstPercent": 1000, "cfsQuotaBurstPercent": 300, "cfsQuotaBurstPeriodSeconds": -1}


def pod(limits: dict[str, int | None]) -> dict[str, Any]:
    """createPodMetaByResource: one container per name, request 1 cpu, the given limit (millicores)."""
    containers = [
        {
            "name": name,
            "resources": {"requests": {"cpu": "1"}, **({"limits": {"cpu": f"{limit}m"}} if limit else {})},
        }
        for name, limit in limits.items()
    ]
    made = make_pod("test-pod-1", node="n1", qos="LS", containers=containers)
    made["metadata"]["uid"] = UID
    made["status"] = {
        "containerStatuses": [
            {"name": name, "containerID": f"containerd://{container_hash(name)}", "state": {"running": {}}}
            for name in limits
        ]
    }
    return made


def stat(periods: int, throttled: int) -> str:
    return f"nr_periods {periods}\nnr_throttled {throttled}\nthrottled_time 0\n"


# (Go case name, {container: limit}, pod quota, {container: quota}, throttled share, config, state, want pod, want)
CASES = [
    (
        "scale-reset-for-burst-config-disabled-on-idle-state",
        {"c1": 2000},
        400_000,
        {"c1": 400_000},
        0.5,
        {**AUTO, "policy": "cpuBurstOnly"},
        "idle",
        200_000,
        {"c1": 200_000},
    ),
    (
        "scale-remain-for-throttled-pod-on-cooling-state",
        {"c1": 2000},
        400_000,
        {"c1": 400_000},
        0.5,
        AUTO,
        "cooling",
        400_000,
        {"c1": 400_000},
    ),
    (
        "scale-down-to-base-for-throttled-pod-on-overload-state",
        {"c1": 2000},
        202_000,
        {"c1": 202_000},
        0.5,
        AUTO,
        "overload",
        200_000,
        {"c1": 200_000},
    ),
    (
        "scale-down-for-throttled-pod-on-overload-state",
        {"c1": 2000},
        400_000,
        {"c1": 400_000},
        0.5,
        AUTO,
        "overload",
        320_000,
        {"c1": 320_000},
    ),
    (
        "scale-down-because-burst-period-config-zero-on-idle-state",
        {"c1": 2000},
        400_000,
        {"c1": 400_000},
        0.5,
        {**AUTO, "cfsQuotaBurstPeriodSeconds": 0},
        "idle",
        320_000,
        {"c1": 320_000},
    ),
    (
        "scale-reset-because-burst-percent-config-illegal-on-idle-state",
        {"c1": 2000},
        400_000,
        {"c1": 400_000},
        0.5,
        {**AUTO, "cfsQuotaBurstPercent": 90},
        "idle",
        200_000,
        {"c1": 200_000},
    ),
    (
        "scale-remain-because-not-throttled-on-idle-state",
        {"c1": 2000},
        580_000,
        {"c1": 580_000},
        0.0,
        AUTO,
        "idle",
        580_000,
        {"c1": 580_000},
    ),
    (
        "scale-up-limit-by-ceil-on-idle-state",
        {"c1": 2000},
        580_000,
        {"c1": 580_000},
        0.5,
        AUTO,
        "idle",
        600_000,
        {"c1": 600_000},
    ),
    (
        "scale-up-from-base-on-idle-state",
        {"c1": 2000},
        200_000,
        {"c1": 200_000},
        0.5,
        AUTO,
        "idle",
        240_000,
        {"c1": 240_000},
    ),
    (
        "scale-up-two-container-from-base-on-idle-state",
        {"c1": 2000, "c2": 3000},
        500_000,
        {"c1": 200_000, "c2": 300_000},
        0.5,
        AUTO,
        "idle",
        600_000,
        {"c1": 240_000, "c2": 360_000},
    ),
    (
        "scale-up-one-container-in-unlimited-pod-from-base-on-idle-state",
        {"c1": 2000, "c2": None},
        -1,
        {"c1": 200_000, "c2": -1},
        0.5,
        AUTO,
        "idle",
        -1,
        {"c1": 240_000, "c2": -1},
    ),
]


@pytest.mark.parametrize(
    "limits,pod_quota,quotas,throttled,config,state,want_pod,want",
    [pytest.param(*c[1:], id=f"TestCPUBurst_applyCFSQuotaBurst/{c[0]}") for c in CASES],
)
def test_cfs_quota_burst_as_koordinator(limits, pod_quota, quotas, throttled, config, state, want_pod, want):
    strategy = CPUBurst(StrategyOptions(koordlet_gates("")), rng=lambda: 0.0)
    slo = make_node_slo("n1", cpu_burst={**config, "sharePoolThresholdPercent": 50})
    current: dict[tuple[str, str], int | str] = {(POD_DIR, "cpu.cfs_quota_us"): pod_quota}
    for name, quota in quotas.items():
        current[(f"{POD_DIR}/{container_hash(name)}", "cpu.cfs_quota_us")] = quota
    used = usage(node_cpu=NODE_CPU[state])
    result = None
    for periods in (100, 200):  # two samples: throttled share = Δnr_throttled / Δnr_periods
        for name in limits:
            current[(f"{POD_DIR}/{container_hash(name)}", "cpu.stat")] = stat(periods, int((periods - 100) * throttled))
        # checked_slo=False: Koordinator's cases include values the agent now refuses (cfsQuotaBurstPercent
        # 90); the strategy's own reset for them is what they test
        result = strategy.round(round_input(NODE, slo, [pod(limits)], used, current=current, checked_slo=False))
    assert result is not None
    quotas_written = {w.cgroup: w.value for w in result.writes if w.resource.name == "cpu.cfs_quota_us"}
    assert quotas_written.get(POD_DIR, pod_quota) == want_pod
    for name, value in want.items():
        assert quotas_written.get(f"{POD_DIR}/{container_hash(name)}", quotas[name]) == value


def test_the_quota_climbs_step_by_step_while_throttled_on_an_idle_node():
    """The gradual scale-up Koordinator does: ×1.2 a round, up to cfsQuotaBurstPercent."""
    strategy = CPUBurst(StrategyOptions(koordlet_gates("")), rng=lambda: 0.0)
    slo = make_node_slo("n1", cpu_burst={**AUTO, "sharePoolThresholdPercent": 50})
    container = f"{POD_DIR}/{container_hash('c1')}"
    current: dict[tuple[str, str], int | str] = {
        (POD_DIR, "cpu.cfs_quota_us"): 200_000,
        (container, "cpu.cfs_quota_us"): 200_000,
    }
    seen = []
    for step in range(12):
        current[(container, "cpu.stat")] = stat(100 * step, 50 * step)
        result = strategy.round(round_input(NODE, slo, [pod({"c1": 2000})], usage(node_cpu=1), current=current))
        for w in result.writes:
            if w.resource.name == "cpu.cfs_quota_us":
                current[(w.cgroup, "cpu.cfs_quota_us")] = w.value
        seen.append(current[(container, "cpu.cfs_quota_us")])
    assert seen[:8] == [200_000, 240_000, 288_000, 345_600, 414_720, 497_664, 597_196, 600_000]
    assert seen[-1] == 600_000 and current[(POD_DIR, "cpu.cfs_quota_us")] == 600_000


def test_the_burst_budget_is_written_for_each_container_and_the_pod():
    """calcStaticCPUBurstVal (TestCPUBurst_applyCPUBurst "apply-by-default-burst-config"): limit ×
    cpuBurstPercent of a CFS period; the pod gets the sum."""
    strategy = CPUBurst(StrategyOptions(koordlet_gates("")))
    slo = make_node_slo("n1", cpu_burst=AUTO)
    result = strategy.round(round_input(NODE, slo, [pod({"c1": 2000, "c2": None})], usage(node_cpu=1)))
    bursts = {w.cgroup: w.value for w in result.writes if w.resource.name == "cpu.cfs_burst_us"}
    assert bursts == {
        f"{POD_DIR}/{container_hash('c1')}": 2_000_000,
        f"{POD_DIR}/{container_hash('c2')}": 0,
        POD_DIR: 2_000_000,
    }


@pytest.mark.parametrize(
    "period,percent,init_ratio,elapsed,usage_percent,allowed,left",
    [
        pytest.param(100, 150, 1, 10, 150, True, 4500, id="consume-enough-token-with-full-init"),
        pytest.param(100, 150, 0.01, 10, 200, False, -950, id="consume-not-enough-token-with-part-init"),
        pytest.param(10, 150, 0.01, 10, 200, False, -500, id="consume-not-enough-token-to-bottom-with-part-init"),
        pytest.param(100, 150, 0.1, 10, 40, True, 1100, id="accumulate-token-with-part-init"),
        pytest.param(100, 150, 0.9, 10, 40, True, 5000, id="accumulate-token-to-ceil-with-part-init"),
    ],
)
def test_burst_limiter_as_koordinator(period, percent, init_ratio, elapsed, usage_percent, allowed, left):
    """Test_burstLimiter_Allow: capacity period × (percent − 100), filled to `init_ratio`."""
    limiter = BurstLimiter.new(period, percent, 0.0, rng=lambda: 0.0)
    limiter.tokens = int(limiter.capacity * init_ratio)
    assert limiter.allow(float(elapsed), usage_percent) is allowed
    assert limiter.tokens == left

"""CPUBurst (Koordinator's `pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go`): for LS/LSR
containers with a CPU limit, `cpu.cfs_burst_us` = quota × cpuBurstPercent / 100 (policy cpuBurstOnly
or auto), and the CFS quota scaled up to cfsQuotaBurstPercent while the node's share pool is below
sharePoolThresholdPercent (policy cfsQuotaBurstOnly or auto), back to the limit's quota above it.
The node's policy comes from the NodeSLO's cpuBurstStrategy; a pod's `koordinator.sh/cpuBurst`
annotation overrides it.
"""

from __future__ import annotations

import json

from policies.constants import ANNOTATION_CPU_BURST, RESOURCE_CPU, QoSClass
from policies.objects import annotations_of
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.cgroups.resources import CPU_BURST, CPU_CFS_QUOTA, DEFAULT_CFS_PERIOD
from scheduler_plugins.koordlet.nodeslo import CPUBurstStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME = "CPUBurst"
CPU_BURST_ONLY, CFS_QUOTA_BURST_ONLY, AUTO, NONE = "cpuBurstOnly", "cfsQuotaBurstOnly", "auto", "none"


def pod_strategy(pod: PodView, node: CPUBurstStrategy) -> CPUBurstStrategy:
    try:
        override = json.loads(annotations_of(pod.pod).get(ANNOTATION_CPU_BURST) or "{}")
    except ValueError:
        return node
    if not isinstance(override, dict) or not override:
        return node
    merged = {
        "policy": node.policy,
        "cpuBurstPercent": node.cpu_burst_percent,
        "cfsQuotaBurstPercent": node.cfs_quota_burst_percent,
        "cfsQuotaBurstPeriodSeconds": node.cfs_quota_burst_period_seconds,
        "sharePoolThresholdPercent": node.share_pool_threshold_percent,
        **override,
    }
    try:
        return CPUBurstStrategy.parse(merged, "metadata.annotations")
    except ValueError:
        return node


class CPUBurst:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.CPU_BURST) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        node_strategy = slo.cpu_burst if slo is not None else CPUBurstStrategy()
        capacity = inp.node_amount("capacity", "cpu")
        used = inp.usage.node.cpu_milli if inp.usage.node else 0
        share_pool_pct = used * 100 // capacity if capacity > 0 else 100
        result.status.update({"policy": node_strategy.policy, "sharePoolUsagePercent": share_pool_pct})
        for pod in inp.pods:
            if pod.qos not in (QoSClass.LS, QoSClass.LSR):
                continue
            strategy = pod_strategy(pod, node_strategy)
            if strategy.policy == NONE:
                continue
            pod_quota = 0
            for c in pod.containers:
                limit = c.limits.get(RESOURCE_CPU, 0)
                if c.dir is None or limit <= 0:
                    pod_quota = -1
                    continue
                base = limit * DEFAULT_CFS_PERIOD // 1000
                if strategy.policy in (CPU_BURST_ONLY, AUTO):
                    burst = min(base * strategy.cpu_burst_percent // 100, CPU_BURST.high or 0)
                    result.writes.append(CgroupWrite(NAME, c.dir, CPU_BURST, burst, Level.CONTAINER))
                quota = base
                if (
                    strategy.policy in (CFS_QUOTA_BURST_ONLY, AUTO)
                    and share_pool_pct < strategy.share_pool_threshold_percent
                ):
                    quota = base * strategy.cfs_quota_burst_percent // 100
                if strategy.policy in (CFS_QUOTA_BURST_ONLY, AUTO):
                    result.writes.append(CgroupWrite(NAME, c.dir, CPU_CFS_QUOTA, quota, Level.CONTAINER))
                if pod_quota >= 0:
                    pod_quota += quota
            if strategy.policy in (CFS_QUOTA_BURST_ONLY, AUTO) and pod.containers:
                result.writes.append(CgroupWrite(NAME, pod.dir, CPU_CFS_QUOTA, pod_quota, Level.POD))
        return result

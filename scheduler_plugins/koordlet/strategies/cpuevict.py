"""CPUEvict (Koordinator's `pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go`): BECPUEvict
evicts BE pods when BE is starved — its real CPU limit falls below
`cpuEvictBESatisfactionLowerPercent` of its request while it uses nearly all of it — until the
satisfaction would reach the upper percent; CPUEvict evicts low-priority pods when the node's CPU
use passes `cpuEvictThresholdPercent`; CPUAllocatableEvict when batch-cpu requests pass the
allocatable. Cool time 20 s.
"""

from __future__ import annotations

from collections.abc import Callable

from policies.constants import BATCH_CPU, QoSClass
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.nodeslo import CPU_EVICT_POLICY_ALLOCATABLE, ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.victims import (
    allocatable_victims,
    by_priority_then_usage,
    release_for,
    take_until,
)

NAME = "CPUEvict"


def be_release_milli(usage: int, request: int, limit: int, upper: int, lower: int, usage_threshold: int) -> int:
    """BECPUEvict's batch-cpu millicores to release (0: BE is satisfied enough)."""
    if request <= 0 or limit <= 0 or upper <= lower:
        return 0
    if usage * 100 < limit * usage_threshold:  # BE is not using what it has: not starved
        return 0
    if limit * 100 > request * lower:  # satisfaction = limit / request > lower %
        return 0
    gap_percent_times_request = request * upper - limit * 100  # request × (upper/100 − limit/request) × 100
    return max(0, gap_percent_times_request // 100)


class CPUEvict:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.cpu_evict_interval
        self.last_evict_time: float | None = None

    def enabled(self) -> bool:
        return (
            self.options.gates.any_enabled(features.BE_CPU_EVICT, features.CPU_EVICT, features.CPU_ALLOCATABLE_EVICT)
            and self.interval > 0
        )

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        t = inp.eviction_thresholds(result, self.last_evict_time, self.options.cpu_evict_cool_time)
        if t is None:
            return result
        gates, usage = self.options.gates, inp.usage

        def cpu(pod: PodView) -> int:
            found = usage.pods.get(pod.key)
            return found.cpu_milli if found else 0

        chosen: set[str] = set()

        def evict(victims: list[PodView], reason: str) -> None:
            for pod in victims:
                chosen.add(pod.key)
                result.evictions.append(Eviction(NAME, pod.pod, pod.key, reason))

        be = [p for p in inp.pods if p.raw_qos is QoSClass.BE]
        if (
            gates.enabled(features.BE_CPU_EVICT)
            and usage.be_cpu is not None
            and t.cpu_evict_be_satisfaction_upper_percent is not None
            and t.cpu_evict_be_satisfaction_lower_percent is not None
        ):
            figures = usage.be_cpu
            limit = figures.limit_milli
            if t.cpu_evict_policy == CPU_EVICT_POLICY_ALLOCATABLE:
                limit = inp.node_amount("allocatable", BATCH_CPU)
            if limit is not None:
                release = be_release_milli(
                    figures.usage_milli,
                    figures.request_milli,
                    limit,
                    t.cpu_evict_be_satisfaction_upper_percent,
                    t.cpu_evict_be_satisfaction_lower_percent,
                    t.cpu_evict_be_usage_threshold_percent,
                )
                result.status["beSatisfactionPercent"] = (
                    limit * 100 // figures.request_milli if figures.request_milli else None
                )
                if release > 0:
                    victims, _ = take_until(by_priority_then_usage(be, cpu), PodView.batch_cpu_request, release, chosen)
                    evict(
                        victims,
                        f"BE CPU satisfaction {limit}m/{figures.request_milli}m below "
                        f"{t.cpu_evict_be_satisfaction_lower_percent}%, releasing {release}m batch-cpu",
                    )
        capacity = inp.node_amount("capacity", "cpu")
        if (
            gates.enabled(features.CPU_EVICT)
            and t.cpu_evict_threshold_percent is not None
            and t.evict_enabled_priority_threshold is not None
            and usage.node is not None
        ):
            found = release_for(
                usage.node.cpu_milli, capacity, t.cpu_evict_threshold_percent, t.cpu_evict_lower_percent
            )
            if found:
                pct, release = found
                candidates = [p for p in inp.pods if p.priority < t.evict_enabled_priority_threshold]
                victims, _ = take_until(by_priority_then_usage(candidates, cpu, annotated=True), cpu, release, chosen)
                evict(
                    victims,
                    f"node CPU usage {pct}% >= threshold {t.cpu_evict_threshold_percent}%, releasing {release}m",
                )
        if gates.enabled(features.CPU_ALLOCATABLE_EVICT):
            self._allocatable(inp, t, chosen, evict)
        if result.evictions:
            self.last_evict_time = inp.now
        return result

    def _allocatable(
        self, inp: RoundInput, t: ThresholdStrategy, chosen: set[str], evict: Callable[[list[PodView], str], None]
    ) -> None:
        found = allocatable_victims(
            inp.pods,
            PodView.batch_cpu_request,
            inp.node_amount("allocatable", BATCH_CPU),
            t.allocatable_evict_priority_threshold,
            t.cpu_allocatable_evict_threshold_percent,
            t.cpu_allocatable_evict_lower_percent,
            chosen,
        )
        if found:
            victims, pct, threshold, release = found
            evict(victims, f"batch-cpu requests {pct}% of allocatable >= {threshold}%, releasing {release}m")

"""CPUEvict (Koordinator's `pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go`, checked
against its `Test_cpuEvict`): three tasks, run in Koordinator's order, sharing the pods they evict
(`victims.kill_and_evict`):

* BECPUEvict evicts BE pods when BE is starved — its real CPU limit falls below
  `cpuEvictBESatisfactionLowerPercent` of its request while it uses nearly all of it — until the
  satisfaction would reach the upper percent;
* CPUAllocatableEvict evicts pods at or below `allocatableEvictPriorityThreshold` when the batch-cpu
  or mid-cpu requests pass `cpuAllocatableEvictThresholdPercent` of the node's allocatable, down to
  the lower percent; a node offering none of that resource releases everything requested of it;
* CPUEvict evicts pods at or below `evictEnabledPriorityThreshold` when the node's CPU use passes
  `cpuEvictThresholdPercent`.

The last two take only pods labelled `koordinator.sh/eviction-enabled: "true"` that have a usage
sample, ordered by `koordinator.sh/eviction-priority`, priority, the `koordinator.sh/priority`
label, then usage (CPUEvict) or request (CPUAllocatableEvict). Every task honours the pod's
`koordinator.sh/eviction-policy` annotation. Cool time 20 s.
"""

from __future__ import annotations

from collections.abc import Callable

from policies.apis.constants import BATCH_CPU, RESOURCE_CPU, QoSClass
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.nodeslo import CPU_EVICT_POLICY_ALLOCATABLE, ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.victims import (
    TARGET_REQUEST,
    TARGET_USED,
    AllocatableLimits,
    EvictTask,
    allocatable_task,
    by_eviction_then_priority,
    kill_and_evict,
    release_for,
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


def be_victims(pods: list[PodView], used: Callable[[PodView], int]) -> list[PodView]:
    """getBEPodEvictInfoAndSort: lower `spec.priority` first, then the larger share of its
    batch-cpu request a pod uses."""

    def share(pod: PodView) -> float:
        request = pod.batch_cpu_request()
        return used(pod) / request if request > 0 else 0.0

    return sorted(pods, key=lambda p: (p.priority, -share(p)))


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
        gates = self.options.gates
        tasks: list[EvictTask] = []
        if gates.enabled(features.BE_CPU_EVICT):
            tasks += self._be_task(inp, t, result)
        if gates.enabled(features.CPU_ALLOCATABLE_EVICT):
            tasks += self._allocatable_task(inp, t)
        if gates.enabled(features.CPU_EVICT):
            tasks += self._used_task(inp, t)
        for task, pod in kill_and_evict(tasks):
            result.evictions.append(Eviction(NAME, pod.pod, pod.key, task.reason))
        if result.evictions:
            self.last_evict_time = inp.now
        return result

    def _be_task(self, inp: RoundInput, t: ThresholdStrategy, result: StrategyResult) -> list[EvictTask]:
        figures = inp.usage.be_cpu
        upper, lower = t.cpu_evict_be_satisfaction_upper_percent, t.cpu_evict_be_satisfaction_lower_percent
        if figures is None or upper is None or lower is None:
            return []
        limit: int | None = figures.limit_milli
        if t.cpu_evict_policy == CPU_EVICT_POLICY_ALLOCATABLE:
            limit = inp.node_amount("allocatable", BATCH_CPU)
        if limit is None:
            return []
        release = be_release_milli(
            figures.usage_milli, figures.request_milli, limit, upper, lower, t.cpu_evict_be_usage_threshold_percent
        )
        result.status["beSatisfactionPercent"] = limit * 100 // figures.request_milli if figures.request_milli else None
        feature = features.BE_CPU_EVICT
        be = [p for p in inp.pods if p.raw_qos is QoSClass.BE and p.eviction_policy_allows(feature)]
        return [
            EvictTask(
                feature,
                f"BE CPU satisfaction {limit}m/{figures.request_milli}m below {lower}%, releasing {release}m batch-cpu",
                be_victims(be, self._used(inp)),
                {BATCH_CPU: release},
                TARGET_REQUEST,
                lambda pod: {BATCH_CPU: pod.batch_cpu_request()},
            )
        ]

    def _allocatable_task(self, inp: RoundInput, t: ThresholdStrategy) -> list[EvictTask]:
        limits = AllocatableLimits(
            t.allocatable_evict_priority_threshold,
            t.cpu_allocatable_evict_threshold_percent,
            t.cpu_allocatable_evict_lower_percent,
        )
        return allocatable_task(inp, features.CPU_ALLOCATABLE_EVICT, RESOURCE_CPU, limits)

    def _used_task(self, inp: RoundInput, t: ThresholdStrategy) -> list[EvictTask]:
        limit, threshold = t.evict_enabled_priority_threshold, t.cpu_evict_threshold_percent
        if limit is None or threshold is None or threshold < 0 or inp.usage.node is None:
            return []
        found = release_for(
            inp.usage.node.cpu_milli, inp.node_amount("capacity", "cpu"), threshold, t.cpu_evict_lower_percent
        )
        if not found:
            return []
        pct, release = found
        used = self._used(inp)
        feature = features.CPU_EVICT
        sampled = [p for p in inp.pods if p.key in inp.usage.pods]
        return [
            EvictTask(
                feature,
                f"node CPU usage {pct}% >= threshold {threshold}%, releasing {release}m",
                by_eviction_then_priority(sampled, feature, limit, used),
                {RESOURCE_CPU: release},
                TARGET_USED,
                lambda pod: {RESOURCE_CPU: used(pod)},
            )
        ]

    @staticmethod
    def _used(inp: RoundInput) -> Callable[[PodView], int]:
        usage = inp.usage

        def cpu(pod: PodView) -> int:
            found = usage.pods.get(pod.key)
            return found.cpu_milli if found else 0

        return cpu

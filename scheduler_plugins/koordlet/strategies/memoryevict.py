"""MemoryEvict (Koordinator's `memoryEvict`,
`pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go`, checked against its
`Test_memoryEvict`): three tasks, run in Koordinator's order, sharing the pods they evict and what
those release (`victims.kill_and_evict`, as CPUEvict's do):

* BEMemoryEvict evicts BE pods, lower priority then larger usage first, when the node's memory use
  passes `memoryEvictThresholdPercent`, until it would fall to the lower percent;
* MemoryAllocatableEvict evicts pods at or below `allocatableEvictPriorityThreshold` when the
  batch-memory or mid-memory requests pass `memoryAllocatableEvictThresholdPercent` of the node's
  allocatable, down to the lower percent; a node offering none of that resource releases
  everything requested of it;
* MemoryEvict evicts pods at or below `evictEnabledPriorityThreshold` on the same usage threshold
  as BEMemoryEvict.

The last two take only pods labelled `koordinator.sh/eviction-enabled: "true"` that have a usage
sample, ordered by `koordinator.sh/eviction-priority`, priority, the `koordinator.sh/priority`
label, then usage (MemoryEvict) or request (MemoryAllocatableEvict). Every task honours the pod's
`koordinator.sh/eviction-policy` annotation. Cool time 4 s.
"""

from __future__ import annotations

from collections.abc import Callable

from policies.apis.constants import RESOURCE_MEMORY, QoSClass
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.nodeslo import ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.victims import (
    TARGET_USED,
    AllocatableLimits,
    EvictTask,
    allocatable_task,
    by_eviction_then_priority,
    by_priority_then_usage,
    kill_and_evict,
    release_for,
)

NAME = "MemoryEvict"


class MemoryEvict:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.memory_evict_interval
        self.last_evict_time: float | None = None

    def enabled(self) -> bool:
        return (
            self.options.gates.any_enabled(
                features.BE_MEMORY_EVICT, features.MEMORY_EVICT, features.MEMORY_ALLOCATABLE_EVICT
            )
            and self.interval > 0
        )

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        t = inp.eviction_thresholds(result, self.last_evict_time, self.options.memory_evict_cool_time)
        if t is None:
            return result
        capacity = inp.node_amount("capacity", RESOURCE_MEMORY)
        if capacity <= 0:
            result.status["reason"] = "node memory capacity is 0"
            return result
        used = inp.usage.node.memory if inp.usage.node else 0
        result.status["usagePercent"] = used * 100 // capacity
        gates = self.options.gates
        tasks: list[EvictTask] = []
        if gates.enabled(features.BE_MEMORY_EVICT):
            tasks += self._used_task(inp, t, features.BE_MEMORY_EVICT, used, capacity)
        if gates.enabled(features.MEMORY_ALLOCATABLE_EVICT):
            limits = AllocatableLimits(
                t.allocatable_evict_priority_threshold,
                t.memory_allocatable_evict_threshold_percent,
                t.memory_allocatable_evict_lower_percent,
            )
            tasks += allocatable_task(inp, features.MEMORY_ALLOCATABLE_EVICT, RESOURCE_MEMORY, limits)
        if gates.enabled(features.MEMORY_EVICT) and t.evict_enabled_priority_threshold is not None:
            tasks += self._used_task(inp, t, features.MEMORY_EVICT, used, capacity)
        for task, pod in kill_and_evict(tasks):
            result.evictions.append(Eviction(NAME, pod.pod, pod.key, task.reason))
        if result.evictions:
            self.last_evict_time = inp.now
        return result

    def _used_task(
        self, inp: RoundInput, t: ThresholdStrategy, feature: str, used: int, capacity: int
    ) -> list[EvictTask]:
        """BEMemoryEvict's or MemoryEvict's task: the same usage threshold, their own victims."""
        threshold = t.memory_evict_threshold_percent
        if threshold is None or threshold < 0:
            return []
        found = release_for(used, capacity, threshold, t.memory_evict_lower_percent)
        if not found:
            return []
        pct, release = found
        memory = self._used(inp)
        if feature == features.BE_MEMORY_EVICT:
            be = [p for p in inp.pods if p.raw_qos is QoSClass.BE and p.eviction_policy_allows(feature)]
            victims, whose = by_priority_then_usage(be, memory), "BE pods"
        else:
            limit = t.evict_enabled_priority_threshold or 0
            sampled = [p for p in inp.pods if p.key in inp.usage.pods]
            victims, whose = (
                by_eviction_then_priority(sampled, feature, limit, memory),
                f"pods with priority <= {limit}",
            )
        reason = f"node memory usage {pct}% >= threshold {threshold}%, releasing {release} bytes from {whose}"
        return [
            EvictTask(
                feature,
                reason,
                victims,
                {RESOURCE_MEMORY: release},
                TARGET_USED,
                lambda pod: {RESOURCE_MEMORY: memory(pod)},
            )
        ]

    @staticmethod
    def _used(inp: RoundInput) -> Callable[[PodView], int]:
        usage = inp.usage

        def memory(pod: PodView) -> int:
            found = usage.pods.get(pod.key)
            return found.memory if found else 0

        return memory

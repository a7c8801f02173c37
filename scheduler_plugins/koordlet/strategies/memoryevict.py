"""MemoryEvict (Koordinator's `memoryEvict`,
`pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go`): when the node's memory use passes a
threshold, evict pods — BE first by priority and usage — until enough is released; then wait the
cool time. Three tasks, in order, each with its gate and the NodeSLO switch: BEMemoryEvict,
MemoryAllocatableEvict, MemoryEvict.
"""

from __future__ import annotations

from collections.abc import Callable

from policies.apis.constants import BATCH_MEMORY, QoSClass
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.nodeslo import ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.victims import (
    allocatable_victims,
    by_priority_then_usage,
    release_for,
    take_until,
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
        capacity = inp.node_amount("capacity", "memory")
        if capacity <= 0:
            result.status["reason"] = "node memory capacity is 0"
            return result
        gates = self.options.gates
        usage = inp.usage
        used = usage.node.memory if usage.node else 0
        result.status["usagePercent"] = used * 100 // capacity

        def mem(pod: PodView) -> int:
            found = usage.pods.get(pod.key)
            return found.memory if found else 0

        chosen: set[str] = set()

        def evict(victims: list[PodView], reason: str) -> None:
            for pod in victims:
                chosen.add(pod.key)
                result.evictions.append(Eviction(NAME, pod.pod, pod.key, reason))

        if gates.enabled(features.BE_MEMORY_EVICT) and t.memory_evict_threshold_percent is not None:
            found = release_for(used, capacity, t.memory_evict_threshold_percent, t.memory_evict_lower_percent)
            if found:
                pct, release = found
                be = [
                    p
                    for p in inp.pods
                    if p.raw_qos is QoSClass.BE and p.eviction_policy_allows(features.BE_MEMORY_EVICT)
                ]
                victims, _ = take_until(by_priority_then_usage(be, mem), mem, release, chosen)
                evict(
                    victims,
                    f"node memory usage {pct}% >= threshold {t.memory_evict_threshold_percent}%, "
                    f"releasing {release} bytes from BE pods",
                )
        if gates.enabled(features.MEMORY_ALLOCATABLE_EVICT):
            self._allocatable(inp, t, chosen, evict)
        if (
            gates.enabled(features.MEMORY_EVICT)
            and t.memory_evict_threshold_percent is not None
            and t.evict_enabled_priority_threshold is not None
        ):
            found = release_for(used, capacity, t.memory_evict_threshold_percent, t.memory_evict_lower_percent)
            if found:
                pct, release = found
                limit = t.evict_enabled_priority_threshold
                candidates = [
                    p for p in inp.pods if p.priority < limit and p.eviction_policy_allows(features.MEMORY_EVICT)
                ]
                victims, _ = take_until(by_priority_then_usage(candidates, mem, annotated=True), mem, release, chosen)
                evict(
                    victims,
                    f"node memory usage {pct}% >= threshold {t.memory_evict_threshold_percent}%, "
                    f"releasing {release} bytes from pods with priority < {limit}",
                )
        if result.evictions:
            self.last_evict_time = inp.now
        return result

    def _allocatable(
        self, inp: RoundInput, t: ThresholdStrategy, chosen: set[str], evict: Callable[[list[PodView], str], None]
    ) -> None:
        found = allocatable_victims(
            [p for p in inp.pods if p.eviction_policy_allows(features.MEMORY_ALLOCATABLE_EVICT)],
            PodView.batch_memory_request,
            inp.node_amount("allocatable", BATCH_MEMORY),
            t.allocatable_evict_priority_threshold,
            t.memory_allocatable_evict_threshold_percent,
            t.memory_allocatable_evict_lower_percent,
            chosen,
        )
        if found:
            victims, pct, threshold, release = found
            evict(victims, f"batch memory requests {pct}% of allocatable >= {threshold}%, releasing {release} bytes")

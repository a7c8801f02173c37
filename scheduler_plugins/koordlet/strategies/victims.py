"""Victim order and release amounts shared by the eviction strategies (Koordinator's
`pkg/koordlet/qosmanager/plugins/util/evict.go` and the cpuevict/memoryevict plugins)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler_plugins.koordlet.pods import PodView

#: the allocatable tasks (CPUAllocatableEvict, MemoryAllocatableEvict) only evict below this priority
MAX_ALLOCATABLE_EVICT_PRIORITY = 7999
DEFAULT_ALLOCATABLE_THRESHOLD, DEFAULT_ALLOCATABLE_LOWER = 110, 100


def by_priority_then_usage(
    pods: Iterable[PodView], usage: Callable[[PodView], int], annotated: bool = False
) -> list[PodView]:
    """Lower `spec.priority` first (then, when `annotated`, a lower eviction-priority annotation);
    then larger usage first, pods using nothing last, and two idle pods by name descending."""

    def key(pod: PodView) -> tuple[int, int, int, int, str]:
        used = usage(pod)
        return (pod.priority, pod.eviction_priority if annotated else 0, 0 if used > 0 else 1, -used, "")

    ordered = sorted(pods, key=lambda p: p.name, reverse=True)  # the stable tie-break: name descending
    return sorted(ordered, key=key)


def take_until(
    ordered: Iterable[PodView], amount: Callable[[PodView], int], needed: int, already: set[str]
) -> tuple[list[PodView], int]:
    """Victims in order until their amounts add up to `needed`; pods in `already` are skipped."""
    chosen: list[PodView] = []
    released = 0
    for pod in ordered:
        if released >= needed:
            break
        if pod.key in already:
            continue
        chosen.append(pod)
        released += amount(pod)
    return chosen, released


def release_for(used: int, capacity: int, threshold: int, lower: int | None) -> tuple[int, int] | None:
    """(usage %, amount to release) when `used` of `capacity` is at or over `threshold` %."""
    low = threshold - 2 if lower is None else lower
    if low >= threshold or capacity <= 0:
        return None
    pct = used * 100 // capacity
    if pct < threshold:
        return None
    return pct, capacity * (pct - low) // 100


def allocatable_victims(
    pods: Iterable[PodView],
    request: Callable[[PodView], int],
    allocatable: int,
    priority_limit: int | None,
    threshold: int | None,
    lower: int | None,
    already: set[str],
) -> tuple[list[PodView], int, int, int] | None:
    """The allocatable task of CPUEvict and MemoryEvict, for one batch resource: when the `request`s
    of pods below `priority_limit` pass `threshold` % of `allocatable`, victims (lowest priority,
    largest request first) until they fall to `lower` %. (victims, request %, threshold, release)."""
    if allocatable <= 0 or priority_limit is None or priority_limit > MAX_ALLOCATABLE_EVICT_PRIORITY:
        return None
    candidates = [p for p in pods if p.priority < priority_limit]
    requested = sum(request(p) for p in candidates)
    threshold = threshold or DEFAULT_ALLOCATABLE_THRESHOLD
    if lower is None and threshold > DEFAULT_ALLOCATABLE_LOWER:
        lower = DEFAULT_ALLOCATABLE_LOWER
    found = release_for(requested, allocatable, threshold, lower)
    if not found:
        return None
    pct, release = found
    victims, _ = take_until(by_priority_then_usage(candidates, request), request, release, already)
    return victims, pct, threshold, release


Amounts = dict[str, int]


@dataclass(frozen=True)
class EvictTask:
    """EvictTaskInfo: one feature's victims in order, what it must release (per resource) and
    which of a pod's amounts count towards it (`target`: its requests or its usage)."""

    feature: str
    reason: str
    pods: Sequence[PodView]
    release: Amounts
    target: str
    amount: Callable[[PodView], Amounts]


def _short(wanted: Amounts, released: Amounts) -> bool:
    return any(amount > released.get(name, 0) for name, amount in wanted.items())


def kill_and_evict(tasks: Sequence[EvictTask]) -> list[tuple[EvictTask, PodView]]:
    """KillAndEvictPods: each task in turn evicts its pods in order until what all the evicted pods
    add up to, on the task's target, covers what it must release. A pod is evicted once; what it
    frees counts for every task of the same target (the largest amount any of them gives it)."""
    tasks = [t for t in tasks if any(v > 0 for v in t.release.values())]
    released: dict[str, Amounts] = {}
    evicted: set[str] = set()
    chosen: list[tuple[EvictTask, PodView]] = []

    def freed(pod: PodView) -> dict[str, Amounts]:
        out: dict[str, Amounts] = {}
        for task in tasks:
            merged = out.setdefault(task.target, {})
            for name, amount in task.amount(pod).items():
                merged[name] = max(merged.get(name, 0), amount)
        return out

    for task in tasks:
        if not _short(task.release, released.get(task.target, {})):
            continue
        for pod in task.pods:
            if pod.key in evicted:
                continue
            evicted.add(pod.key)
            chosen.append((task, pod))
            for target, amounts in freed(pod).items():
                total = released.setdefault(target, {})
                for name, amount in amounts.items():
                    total[name] = total.get(name, 0) + amount
            if not _short(task.release, released.get(task.target, {})):
                break
    return chosen


def by_eviction_then_priority(
    pods: Iterable[PodView], feature: str, priority_limit: int, sub: Callable[[PodView], int]
) -> list[PodView]:
    """getPodEvictInfoAndSortByPriority: the pods at or below `priority_limit` (their defaulted
    priority) that carry `koordinator.sh/eviction-enabled: "true"` and whose eviction policy allows
    `feature`; lower `koordinator.sh/eviction-priority` first, then lower priority, then lower
    `koordinator.sh/priority` label, then larger `sub` (usage or request)."""
    chosen = [
        p for p in pods if p.eviction_policy_allows(feature) and p.priority_value <= priority_limit and p.evict_enabled
    ]
    return sorted(chosen, key=lambda p: (p.eviction_priority, p.priority_value, p.label_priority, -sub(p)))

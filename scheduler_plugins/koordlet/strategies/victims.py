"""Victim order and release amounts shared by the eviction strategies (Koordinator's
`pkg/koordlet/qosmanager/plugins/util/evict.go` and the cpuevict/memoryevict plugins)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from policies.apis.constants import EXTENDED_RESOURCE_NAMES
from scheduler_plugins.koordlet.pods import PodView, every_pod_view
from scheduler_plugins.koordlet.strategies.base import RoundInput

#: the allocatable tasks (CPUAllocatableEvict, MemoryAllocatableEvict) only evict at or below this priority
MAX_ALLOCATABLE_EVICT_PRIORITY = 7999
DEFAULT_ALLOCATABLE_THRESHOLD, DEFAULT_ALLOCATABLE_LOWER = 110, 100
#: the release targets (ReleaseTargetType): what of a pod counts towards a task's release
TARGET_REQUEST, TARGET_USED = "podResourceRequest", "podUsed"
#: ReverseResourceNameMap: the band whose pods free an extended resource (batch-cpu: koord-batch)
_BAND_OF = {name: band for band, names in EXTENDED_RESOURCE_NAMES.items() for name in names.values()}


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


def release_for(used: int, capacity: int, threshold: int, lower: int | None) -> tuple[int, int] | None:
    """(usage %, amount to release) when `used` of `capacity` is at or over `threshold` %."""
    low = threshold - 2 if lower is None else lower
    if low >= threshold or capacity <= 0:
        return None
    pct = used * 100 // capacity
    if pct < threshold:
        return None
    return pct, capacity * (pct - low) // 100


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


def allocatable_release(
    pods: Iterable[PodView], resource: str, allocatable: Amounts, priority_limit: int, threshold: int, lower: int
) -> Amounts:
    """calculateMilliReleaseByAllocatableThresholdPercent (cpu) and
    calculateReleaseByAllocatableThresholdPercent (memory): per name the pods at or below
    `priority_limit` request `resource` in (mid-*, batch-*, or the plain name for the other bands),
    what to release: the whole request where the node offers none of it, else what passes
    `lower` % of the allocatable once the requests pass `threshold` %."""
    requested: Amounts = {}
    for pod in pods:
        if pod.priority_value > priority_limit:
            continue
        name, amount = pod.typed_request(resource)
        requested[name] = requested.get(name, 0) + amount
    release: Amounts = {}
    for name, amount in requested.items():
        total = allocatable.get(name, 0)
        if total <= 0:
            release[name] = amount
        elif amount * 100 > threshold * total:
            release[name] = int(amount - lower / 100 * total)
    return release


@dataclass(frozen=True)
class AllocatableLimits:
    """The NodeSLO's allocatable-eviction settings for one resource, defaults applied."""

    priority_limit: int | None
    threshold: int | None
    lower: int | None

    def resolved(self) -> tuple[int, int, int] | None:
        """(priority limit, threshold %, lower %), or None when the task cannot run: no priority
        limit, one above koord-mid's (koord-prod pods are never evicted), or lower >= threshold."""
        limit, threshold = self.priority_limit, self.threshold or DEFAULT_ALLOCATABLE_THRESHOLD
        lower = DEFAULT_ALLOCATABLE_LOWER if self.lower is None else self.lower
        if limit is None or limit > MAX_ALLOCATABLE_EVICT_PRIORITY or threshold < 0 or lower >= threshold:
            return None
        return limit, threshold, lower


def allocatable_task(inp: RoundInput, feature: str, resource: str, limits: AllocatableLimits) -> list[EvictTask]:
    """The allocatable task of CPUEvict and MemoryEvict (CPUAllocatableEvict,
    MemoryAllocatableEvict): release what the pods at or below the priority limit request of the
    batch and mid resources beyond the node's allocatable; the victims are the labelled pods with a
    usage sample (`by_eviction_then_priority`), larger request first; a pod frees its request only
    for its own band's resource."""
    resolved = limits.resolved()
    if resolved is None:
        return []
    limit, threshold, lower = resolved
    every_pod = every_pod_view(inp.state.pods, inp.layout)  # Koordinator sums every pod's requests
    names = (resource, *(by_resource[resource] for by_resource in EXTENDED_RESOURCE_NAMES.values()))
    allocatable = {name: inp.node_amount("allocatable", name) for name in names}
    release = allocatable_release(every_pod, resource, allocatable, limit, threshold, lower)
    if not release:
        return []
    bands = {_BAND_OF[name] for name in release if name in _BAND_OF}

    def freed(pod: PodView) -> Amounts:
        if pod.priority_class not in bands:
            return {}
        name, amount = pod.typed_request(resource)
        return {name: amount}

    sampled = [p for p in inp.pods if p.key in inp.usage.pods]
    reason = ", ".join(
        f"{name} requests over {threshold}% of allocatable {allocatable.get(name, 0)}, releasing {amount}"
        for name, amount in sorted(release.items())
        if amount > 0
    )
    ordered = by_eviction_then_priority(sampled, feature, limit, lambda p: p.typed_request(resource)[1])
    return [EvictTask(feature, reason, ordered, release, TARGET_REQUEST, freed)]

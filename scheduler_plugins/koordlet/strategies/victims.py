"""Victim order and release amounts shared by the eviction strategies (Koordinator's
`memory_evict.go`, `cpu_evict.go`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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

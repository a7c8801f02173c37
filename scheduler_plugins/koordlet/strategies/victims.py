"""Victim order shared by the eviction strategies (spec §5–6)."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from scheduler_plugins.koordlet.pods import PodView


def by_priority_then_usage(pods: Iterable[PodView], usage: Callable[[PodView], int],
                           annotated: bool = False) -> list[PodView]:
    """Lower `spec.priority` first (then, when `annotated`, a lower eviction-priority annotation);
    then larger usage first, pods using nothing last, and two idle pods by name descending."""
    def key(pod: PodView) -> tuple[int, int, int, int, str]:
        used = usage(pod)
        return (pod.priority, pod.eviction_priority if annotated else 0, 0 if used > 0 else 1, -used, "")

    ordered = sorted(pods, key=lambda p: p.name, reverse=True)  # the stable tie-break: name descending
    return sorted(ordered, key=key)


def take_until(ordered: Iterable[PodView], amount: Callable[[PodView], int], needed: int,
               already: set[str]) -> tuple[list[PodView], int]:
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

"""Whether the manager writes a node now (`noderesource/resource_calculator.go`
isNodeResourceSyncNeeded, `pkg/util/resource.go` IsResourceDiff), so a node's status does not flap.

The status is written on the first round after start, when the last write is older than
`updateTimeThresholdSeconds`, or when a batch/mid resource appears, disappears or moves by more
than `resourceDiffThreshold` of its old value. The metadata is patched when the CPU normalization
ratio annotation is created, removed or moves by more than 0.01.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Final, Protocol

from policies.apis.slo_config.colocation import ColocationStrategy
from scheduler_plugins.manager.noderesource.inputs import lenient_milli


class Decision:
    """Whether the node's status (`status`) and its metadata (`meta`) are written, and why.

    A value (its attributes are `Final`, never assigned after `__init__`), written as a plain class
    rather than a frozen dataclass: one is made per node and round, and a frozen dataclass's
    generated `__init__` sets each field through `object.__setattr__` in the interpreter, even in
    a module mypyc compiles (~25 times a compiled `__init__`; see docs/benchmarks.md)."""

    __slots__ = ("status", "meta", "reason")

    def __init__(self, status: bool, meta: bool, reason: str) -> None:
        self.status: Final = status
        self.meta: Final = meta
        self.reason: Final = reason

    @property
    def update(self) -> bool:
        return self.status or self.meta

    def __repr__(self) -> str:
        return f"Decision(status={self.status!r}, meta={self.meta!r}, reason={self.reason!r})"


def resource_difference(
    old: Mapping[str, object], new: Mapping[str, object], name: str, threshold: float
) -> str | None:
    """Why `name` differs (`IsResourceDiff`), or None when it does not."""
    return _difference(
        name,
        lenient_milli(old[name]) if name in old else None,
        lenient_milli(new[name]) if name in new else None,
        threshold,
    )


def _difference(name: str, before: int | None, after: int | None, threshold: float) -> str | None:
    """`IsResourceDiff` over the amounts in thousandths (None: the resource is absent on that side)."""
    if before is None or after is None:
        if before is None and after is None:
            return None
        return f"{name.removeprefix('kubernetes.io/')} {'added' if before is None else 'removed'}"
    if abs(float(after - before)) > float(before) * threshold:
        percent = f"{abs(after - before) * 100 / before:.0f} %" if before else "from 0"
        return f"{name.removeprefix('kubernetes.io/')} differs by {percent} (threshold {threshold * 100:g} %)"
    return None


def resource_differences(
    names: Sequence[str], threshold: float, old: Mapping[str, int], new: Mapping[str, int]
) -> list[str]:
    """Why each of `names` differs (`IsResourceDiff`, amounts in thousandths): the status check of a
    plugin that writes resources."""
    reasons = []
    for name in names:
        before, after = old.get(name), new.get(name)
        if before is not None and after is not None and abs(float(after - before)) <= float(before) * threshold:
            continue  # within the threshold (`_difference`'s None, without the call)
        # absent on both sides: no difference (mid resources of a node without mid)
        why = _difference(name, before, after, threshold)
        if why is not None:
            reasons.append(why)
    return reasons


class StatusCheck(Protocol):
    def needs_sync(
        self, strategy: ColocationStrategy, old: Mapping[str, int], new: Mapping[str, int]
    ) -> Sequence[str]: ...


class MetaCheck(Protocol):
    def needs_sync_meta(self, old: Mapping[str, str], new: Mapping[str, str]) -> str | None: ...


def decide_amounts(
    status_checks: Sequence[StatusCheck],
    meta_checks: Sequence[MetaCheck],
    strategy: ColocationStrategy,
    old: Mapping[str, int],
    new: Mapping[str, int],
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    last_write: float | None,
    now: float,
) -> Decision:
    """The write decision for one node (`last_write` None: no write since start), over the plugins'
    resources in thousandths (a quantity that does not parse counts 0): the node's current ones are
    read once per Node object, the new ones are the integers the texts are formatted from. Each
    status check, then each meta check, in table order, adds its reasons."""
    reasons = []
    status = False
    if last_write is None:
        status = True
        reasons.append("first write")
    elif now - last_write > strategy.update_time_threshold_seconds:
        status = True
        reasons.append(f"last write {now - last_write:.0f}s ago (threshold {strategy.update_time_threshold_seconds}s)")
    for check in status_checks:
        why_status = check.needs_sync(strategy, old, new)
        if why_status:
            status = True
            reasons.extend(why_status)
    meta = False
    for meta_check in meta_checks:
        why = meta_check.needs_sync_meta(old_annotations, new_annotations)
        if why is not None:
            meta = True
            reasons.append(why)
    if not reasons:
        return Decision(
            status,
            meta,
            _unchanged(
                strategy.resource_diff_threshold, now - (last_write or now), strategy.update_time_threshold_seconds
            ),
        )
    return Decision(status, meta, "; ".join(reasons))


@lru_cache(maxsize=1024)
def _unchanged(threshold: float, since: float, update_seconds: int) -> str:
    """The reason of a node left as it is (cached: most nodes, most rounds, at the same few ages)."""
    return f"unchanged within {threshold * 100:g} %, written {since:.0f}s ago (threshold {update_seconds}s)"

"""What LoadAwareScheduling derives from one node's state, computed once per change of that
node rather than once per pod: the thresholds that apply, the estimated allocatable, and for each
threshold the smallest pod estimate that would push the node over it.

Filter's test `round((usage + estimate) / allocatable × 100) > threshold` (float division, Go
rounding) is monotonic in the estimate, so it is equivalent to `estimate >= limit` with `limit`
found here exactly (integer arithmetic, then checked against the float formula itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_plugins.scheduler.framework.status import Status, unschedulable
from scheduler_plugins.scheduler.plugins.loadaware.estimator import go_round

MAX_ADJUST_STEPS = 8
_REASONS: dict[tuple[str, bool], Status] = {}


def exceed_status(resource: str, aggregated: bool) -> Status:
    status = _REASONS.get((resource, aggregated))
    if status is None:
        what = "aggregated usage" if aggregated else "usage"
        status = _REASONS[(resource, aggregated)] = unschedulable(f"node(s) {resource} {what} exceed threshold")
    return status


def over_threshold(used: int, allocatable: int, threshold: int) -> bool:
    return go_round(used / allocatable * 100) > threshold


def smallest_failing_estimate(usage: int, allocatable: int, threshold: int) -> int:
    """The least estimate e with round((usage + e) / allocatable × 100) > threshold."""
    # exact: round(x) > t  <=>  x >= t + 0.5  <=>  (usage + e) * 200 >= (2t + 1) * allocatable
    limit = -(-(2 * threshold + 1) * allocatable // 200) - usage
    for _ in range(MAX_ADJUST_STEPS):  # float rounding may differ from the exact bound by one
        if over_threshold(usage + limit - 1, allocatable, threshold):
            limit -= 1
        elif not over_threshold(usage + limit, allocatable, threshold):
            limit += 1
        else:
            break
    return limit


Check = tuple[int, int, Status]  # (resource index, smallest failing estimate, status)


def threshold_checks(
    resources: Sequence[str],
    thresholds: Mapping[str, int],
    allocatable: Sequence[int],
    usage: Sequence[int] | None,
    aggregated: bool,
) -> list[Check]:
    checks = []
    for i, name in enumerate(resources):
        threshold = thresholds.get(name, 0)
        if threshold == 0 or allocatable[i] == 0:
            continue
        used = usage[i] if usage is not None else 0
        checks.append((i, smallest_failing_estimate(used, allocatable[i], threshold), exceed_status(name, aggregated)))
    return checks


class NodeView:
    """Per-node derived values, valid until the node or its cache entry changes (`version`).
    `filter` and `score` memoise per variant (is the pod judged as a prod pod?)."""

    __slots__ = ("version", "node", "allocatable", "has_prod_thresholds", "filter", "score")

    def __init__(self, version: int, node: object, allocatable: list[int], has_prod_thresholds: bool) -> None:
        self.version = version
        self.node = node
        self.allocatable = allocatable
        self.has_prod_thresholds = has_prod_thresholds
        self.filter: dict[bool, list[Check] | None] = {}
        self.score: dict[bool, list[int] | None] = {}

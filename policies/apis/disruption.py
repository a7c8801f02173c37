"""PodDisruptionBudgets as the API server's eviction subresource reads them (`policy/v1`).

One home for "does this budget select the pod" and "how many more disruptions does it allow",
shared by the descheduler's offline evictions (`descheduler/backends.py`) and the scheduler's
preemption, which prefers victims whose eviction violates no budget (kube-scheduler's
`pkg/scheduler/framework/preemption`, `filterPodsWithPDBViolation`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from policies.apis.objects import labels_of, namespace_of
from policies.apis.selectors import InvalidSelector, compile_selector

PDB_KIND: Final = "PodDisruptionBudget"


def healthy(pod: Mapping[str, Any]) -> bool:
    """Running and Ready: what the disruption controller counts in `currentHealthy`."""
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def selector_of(budget: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """`selects` for one budget, its selector compiled once (preemption asks about many pods)."""
    namespace = namespace_of(budget) or "default"
    raw = (budget.get("spec") or {}).get("selector")
    selector = compile_selector(raw, "spec.selector") if raw is not None else None
    if selector is None or isinstance(selector, InvalidSelector) or selector.is_empty:
        return lambda pod: False
    compiled = selector

    def check(pod: Mapping[str, Any]) -> bool:
        return (namespace_of(pod) or "default") == namespace and compiled.matches(labels_of(pod))

    return check


def selects(budget: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the budget covers the pod: same namespace, and its selector matches the pod's labels
    (policy/v1: an empty or missing selector selects no pods)."""
    if (namespace_of(budget) or "default") != (namespace_of(pod) or "default"):
        return False
    raw = (budget.get("spec") or {}).get("selector")
    if raw is None:
        return False
    selector = compile_selector(raw, "spec.selector")
    if isinstance(selector, InvalidSelector) or selector.is_empty:
        return False
    return selector.matches(labels_of(pod))


def disruptions_allowed(budget: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> int:
    """Healthy selected pods minus what the budget must keep (`minAvailable`, or the selected pods
    minus `maxUnavailable`; percentages rounded up), computed from `pods` (the budget's namespace)."""
    spec = budget.get("spec") or {}
    selected = [p for p in pods if selects(budget, p)]
    count = sum(1 for p in selected if healthy(p))
    if spec.get("maxUnavailable") is not None:
        return count - (len(selected) - _scaled(spec["maxUnavailable"], len(selected)))
    return count - _scaled(spec.get("minAvailable", 0), len(selected))


def status_allowed(budget: Mapping[str, Any]) -> int | None:
    """`status.disruptionsAllowed` when the disruption controller wrote it, else None."""
    value = (budget.get("status") or {}).get("disruptionsAllowed")
    return int(value) if isinstance(value, int) else None

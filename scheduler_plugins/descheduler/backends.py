"""Where an eviction goes offline (`--cluster DIR`): the pod leaves the in-memory store, so later
rounds see it gone. Nothing is written to the directory.

PodDisruptionBudgets in the directory are honoured as the API server's eviction subresource does:
a pod selected by a budget that allows no disruption now (healthy selected pods minus
`minAvailable`, or minus the pods `maxUnavailable` keeps; percentages rounded up) is refused
(`BLOCKED`, a skip with a reason); a pod selected by more than one budget cannot be evicted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from cluster.eviction import EvictionResult, Outcome
from cluster.store import ClusterStore
from policies.objects import labels_of, namespace_of
from policies.selectors import InvalidSelector, compile_selector

PDB_KIND: Final = "PodDisruptionBudget"
BLOCKED_MESSAGE: Final = "Cannot evict pod as it would violate the pod's disruption budget."


def _healthy(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def _selects(budget: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    raw = (budget.get("spec") or {}).get("selector")
    if raw is None:
        return False
    selector = compile_selector(raw, "spec.selector")
    if isinstance(selector, InvalidSelector) or selector.is_empty:
        return False  # policy/v1: an empty selector selects no pods
    return selector.matches(labels_of(pod))


def disruptions_allowed(budget: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> int:
    spec = budget.get("spec") or {}
    selected = [p for p in pods if _selects(budget, p)]
    healthy = sum(1 for p in selected if _healthy(p))
    if spec.get("maxUnavailable") is not None:
        return healthy - (len(selected) - _scaled(spec["maxUnavailable"], len(selected)))
    return healthy - _scaled(spec.get("minAvailable", 0), len(selected))


class StoreEvictions:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            budgets = [
                b
                for b in self.store.objects(PDB_KIND)
                if (namespace_of(b) or "default") == namespace and _selects(b, pod)
            ]
            if len(budgets) > 1:
                return EvictionResult(
                    Outcome.FAILED,
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                    500,
                )
            if budgets:
                pods = [p for p in self.store.objects("Pod") if (namespace_of(p) or "default") == namespace]
                if disruptions_allowed(budgets[0], pods) <= 0:
                    return EvictionResult(Outcome.BLOCKED, BLOCKED_MESSAGE, 429)
        self.store.delete("Pod", pod)
        return EvictionResult(Outcome.EVICTED, "", 201)

"""Where an eviction goes offline (`--cluster DIR`): the pod leaves the in-memory store, so later
rounds see it gone. Nothing is written to the directory.

PodDisruptionBudgets in the directory are honoured as the API server's eviction subresource does:
a pod selected by a budget that allows no disruption now (healthy selected pods minus
`minAvailable`, or minus the pods `maxUnavailable` keeps; percentages rounded up) is refused
(`BLOCKED`, a skip with a reason); a pod selected by more than one budget cannot be evicted.
"""

from __future__ import annotations

from typing import Final

from colocate.cluster.eviction import EvictionResult, Outcome
from colocate.cluster.store import ClusterStore
from policies.apis.disruption import PDB_KIND, disruptions_allowed, selects
from policies.apis.objects import namespace_of, status_of

__all__ = ["PDB_KIND", "BLOCKED_MESSAGE", "StoreEvictions"]

BLOCKED_MESSAGE: Final = "Cannot evict pod as it would violate the pod's disruption budget."


class StoreEvictions:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
        if status_of(pod).get("phase") not in ("Succeeded", "Failed"):
            budgets = [b for b in self.store.objects(PDB_KIND) if selects(b, pod)]
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

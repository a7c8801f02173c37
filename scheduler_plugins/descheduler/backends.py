"""Where an eviction goes offline (`--cluster DIR`): the pod leaves the in-memory store, so later
rounds see it gone. Nothing is written to the directory, and no disruption budget is consulted
(the API server does that in a cluster: `cluster.eviction.EvictionClient`)."""
from __future__ import annotations

from cluster.eviction import EvictionResult, Outcome
from cluster.store import ClusterStore


class StoreEvictions:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
        self.store.delete("Pod", pod)
        return EvictionResult(Outcome.EVICTED, "", 201)

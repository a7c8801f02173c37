"""The cluster store's health as Prometheus series, defined once for every component.

Both label sets are closed: `kind` comes from the kinds a component watches, `reason` is `gone`
(the watch expired: relist), `absent` (the API server does not serve the kind: its CRD is not
installed) or `error` (anything else: back off and retry).
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Gauge

from colocate.cluster.store import ClusterStore


class StoreHealthMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.stale = Gauge(
            "colocate_cluster_state_stale_seconds",
            "Seconds since the watch of a kind broke; 0 while it is healthy. The last good state is served.",
            ["kind"],
            registry=registry,
            multiprocess_mode="max",
        )
        self.watch_failures = Counter(
            "colocate_watch_failures_total",
            "List/watch failures by kind and reason (gone = relist after 410, absent = the kind is not served, "
            "error = backoff and retry).",
            ["kind", "reason"],
            registry=registry,
        )

    def watch_failed(self, kind: str, reason: str) -> None:
        """The store's `on_failure` callback."""
        self.watch_failures.labels(kind, reason).inc()

    def export(self, store: ClusterStore) -> None:
        for kind, seconds in store.stale_seconds().items():
            self.stale.labels(kind).set(seconds)

    async def export_forever(self, store: ClusterStore, interval: float = 1.0) -> None:
        """Refresh the staleness gauges every `interval` seconds until cancelled."""
        while True:
            self.export(store)
            await asyncio.sleep(interval)

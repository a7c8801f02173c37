"""The cluster store's health as Prometheus series, defined once for every component.

Both label sets are closed: `kind` comes from the kinds a component watches, `reason` is `gone`
(the watch expired: relist), `absent` (the API server does not serve the kind: its CRD is not
installed) or `error` (anything else: back off and retry).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, TypeAlias

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from colocate.cluster.store import ClusterStore

Merge: TypeAlias = Literal[
    "all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum", "mostrecent", "livemostrecent"
]
"""How a gauge's values of several worker processes combine in one scrape (prometheus_client's
`multiprocess_mode`); one process's value is its value whatever it says."""


class Series:
    """Declares a component's series into its own registry (None: kept out of any registry, for
    prometheus_client's multiprocess collector to read from every worker's files), so that each
    declaration says only what differs: its name, help and labels (a closed set), and a gauge's
    `merge` or a histogram's buckets."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.registry = registry

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, documentation, labels, registry=self.registry)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = (), *, merge: Merge = "all") -> Gauge:
        return Gauge(name, documentation, labels, registry=self.registry, multiprocess_mode=merge)

    def histogram(
        self, name: str, documentation: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> Histogram:
        return Histogram(name, documentation, labels, registry=self.registry, buckets=buckets)


class StoreHealthMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        series = Series(registry)
        self.stale = series.gauge(
            "colocate_cluster_state_stale_seconds",
            "Seconds since the watch of a kind broke; 0 while it is healthy. The last good state is served.",
            ("kind",),
            merge="max",
        )
        self.watch_failures = series.counter(
            "colocate_watch_failures_total",
            "List/watch failures by kind and reason (gone = relist after 410, absent = the kind is not served, "
            "error = backoff and retry).",
            ("kind", "reason"),
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

"""Prometheus metrics of the webhook server.

controller-runtime's webhook metric names (so existing dashboards work), Koordinator's per-plugin
duration histogram, and colocate's own profile-match counter. Metrics live in a registry owned by
the app, not in prometheus_client's global one. With several worker processes, prometheus_client's
multiprocess mode aggregates every worker's values into each scrape.

The series every admission touches are tallied first (`CounterTally`, `HistogramTally`,
`GaugeTally`): plain numbers the event loop adds to, handed to prometheus_client in one batch by
`flush()`. prometheus_client takes a lock per call and walks a histogram's buckets in Python, about
a microsecond a call and a dozen calls an admission. Only the event loop writes the tallies and
flushes them, so they need no lock. `render()` flushes first, so a single process's scrape is exact;
with several workers each flushes every `FLUSH_INTERVAL` (`flush_periodically`), so a scrape may
lag another worker's last second.
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from colocate.cluster.metrics import Series, StoreHealthMetrics
from policies.admission.plugin import ProfileWarning
from webhook.registry import Route

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
MULTIPROCESS_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
# Koordinator: exponential buckets from 0.001 ms, factor 2, 20 buckets.
PLUGIN_BUCKETS_MS: Final = tuple(0.001 * 2**i for i in range(20))
LATENCY_BUCKETS_S: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
FLUSH_INTERVAL: Final = 1.0
T = TypeVar("T")


class CounterTally:
    """Increments of one counter series, added to it on `flush()`."""

    __slots__ = ("child", "pending")

    def __init__(self, child: Any) -> None:
        self.child, self.pending = child, 0

    def inc(self, amount: int = 1) -> None:
        self.pending += amount

    def flush(self) -> None:
        if self.pending:
            self.child.inc(self.pending)
            self.pending = 0


class GaugeTally(CounterTally):
    """Ups and downs of one gauge series (a net change, possibly negative), applied on `flush()`."""

    __slots__ = ()

    def dec(self, amount: int = 1) -> None:
        self.pending -= amount


class HistogramTally:
    """Observations of one histogram series, bucketed here (a C bisection) and added on `flush()`.

    prometheus_client's own `observe` counts an observation in the first bucket whose upper bound
    holds it (cumulated at exposition), which is what `bisect_left` finds; the flush adds to the
    same bucket values, so a scrape shows what per-call observes would have shown.
    """

    __slots__ = ("child", "bounds", "counts", "total", "observed")

    def __init__(self, child: Any) -> None:
        self.child = child
        self.bounds = tuple(child._upper_bounds)  # ends with +Inf: every value has a bucket
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        self.observed = False

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value
        self.observed = True

    def flush(self) -> None:
        if not self.observed:
            return
        for index, count in enumerate(self.counts):
            if count:
                self.child._buckets[index].inc(count)
                self.counts[index] = 0
        self.child._sum.inc(self.total)
        self.total, self.observed = 0.0, False


class RouteSeries:
    """The series one admission route touches on every request."""

    def __init__(self, metrics: WebhookMetrics, route: Route) -> None:
        self.path = route.path
        self.requests_ok = metrics.tally(metrics.requests_total, route.path, "200")
        self.latency = metrics.histogram_tally(metrics.latency, route.path)
        self.in_flight = metrics.gauge_tally(metrics.in_flight, route.path)


class WebhookMetrics:
    def __init__(self) -> None:
        self.multiprocess_dir = os.environ.get(MULTIPROCESS_ENV) or None
        self.registry = CollectorRegistry(auto_describe=True)
        registry = None if self.multiprocess_dir else self.registry
        series = Series(registry)
        self._declare_admission_series(series)
        self._declare_state_series(series)
        self._declare_certificate_series(series)
        self._declare_connection_series(series)
        self._tallies: dict[tuple[object, ...], Any] = {}  # one per series; only the event loop adds
        self._profile_tallies: dict[str, CounterTally] = {}  # profile -> its series' tally in `_tallies`
        if self.multiprocess_dir:
            from prometheus_client import multiprocess

            multiprocess.MultiProcessCollector(self.registry, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]

    def _declare_admission_series(self, series: Series) -> None:
        """Requests, their latency, plugins and profiles."""
        self.requests_total = series.counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ("webhook", "code"),
        )
        self.latency = series.histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests.",
            ("webhook",),
            buckets=LATENCY_BUCKETS_S,
        )
        self.in_flight = series.gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ("webhook",),
            merge="livesum",
        )
        self.plugin_duration = series.histogram(
            "koord_manager_webhook_webhook_duration_milliseconds",
            "Duration of each webhook plugin in milliseconds.",
            ("webhook_type", "object_type", "operation", "plugin_name", "status"),
            buckets=PLUGIN_BUCKETS_MS,
        )
        self.profile_matches = series.counter(
            "colocate_profile_matches_total", "Admission requests each ClusterColocationProfile matched.", ("profile",)
        )
        self.warn_only = series.counter(
            "colocate_warn_only_profile_effects_total",
            "Admissions a warn-only ClusterColocationProfile would have changed (outcome=change) or denied "
            "(outcome=deny), had it been enforced.",
            ("profile", "outcome"),
        )

    def _declare_state_series(self, series: Series) -> None:
        """The cluster state the webhook decides against."""
        self.state_objects = series.gauge(
            "colocate_cluster_state_objects",
            "Objects in the cluster state the handlers read, by kind.",
            ("kind",),
            merge="max",
        )
        self.state_problems = series.gauge(
            "colocate_cluster_state_problems",
            "Objects or files of the cluster state that could not be used.",
            merge="max",
        )
        self.state_reloads = series.counter(
            "colocate_cluster_state_reloads_total", "Reloads of the cluster state, by result.", ("result",)
        )
        self.store_health = StoreHealthMetrics(series.registry)

    def _declare_certificate_series(self, series: Series) -> None:
        """The serving certificates, and the reads the quota webhook makes live."""
        self.cert_expiry = series.gauge(
            "colocate_certificate_expiry_timestamp_seconds",
            "When the certificate being served (serving) and the CA that issued it (ca) expire, Unix time.",
            ("certificate",),
            merge="livemin",
        )
        self.cert_reloads = series.counter(
            "colocate_certificate_reloads_total",
            "Reloads of the serving certificate into the running TLS context, by result (ok or error).",
            ("result",),
        )
        self.live_reads = series.counter(
            "colocate_webhook_live_reads_total",
            "Objects read from the API server for an admission the watched state could not answer yet "
            "(an ElasticQuota's parent not shown by the watch), by result: found, missing, error.",
            ("result",),
        )

    def _declare_connection_series(self, series: Series) -> None:
        """Refusals, connections and the log writer."""
        self.refused = series.counter(
            "colocate_webhook_refused_requests_total",
            "Admission requests refused before or instead of the policies, by reason: bad_review, bad_object "
            "(too deep, wrong shape, bad quantity), too_large, encoding, slow_body, busy, internal_error.",
            ("webhook", "reason"),
        )
        self.connections = series.gauge(
            "colocate_webhook_connections",
            "Open connections to the webhook port, from accept (TLS handshake included) to close.",
            merge="livesum",
        )
        self.connections_closed = series.counter(
            "colocate_webhook_connections_closed_total",
            "Connections the server closed itself, by reason: over_limit (--max-connections, all in a "
            "request), unserved_evicted (not yet past its first request, to make room at --max-connections), "
            "idle_evicted (kept alive between requests, to make room), idle_at_shutdown (kept alive between "
            "requests at SIGTERM, once the drain is over), handshake_timeout, "
            "first_request_timeout, tls_handshake_failed, head_too_large (a request head over 64 KiB, or "
            "past --body-budget-bytes).",
            ("reason",),
        )
        self.log_lines_dropped = series.counter(
            "colocate_log_lines_dropped_total",
            "Log lines dropped because the log writer fell behind (its queue is bounded).",
        )

    # -- the tallies of the series admissions touch ------------------------------------------------
    def _tally(self, metric: Any, make: Callable[[Any], T], labels: tuple[str, ...]) -> T:
        key = (id(metric), *labels)
        found = self._tallies.get(key)
        if found is None:  # resolving labels takes a lock and a few dict lookups: once per series
            found = self._tallies[key] = make(metric.labels(*labels))
        return found

    def tally(self, counter: Counter, *labels: str) -> CounterTally:
        return self._tally(counter, CounterTally, labels)

    def gauge_tally(self, gauge: Gauge, *labels: str) -> GaugeTally:
        return self._tally(gauge, GaugeTally, labels)

    def histogram_tally(self, histogram: Histogram, *labels: str) -> HistogramTally:
        return self._tally(histogram, HistogramTally, labels)

    def route_series(self, route: Route) -> RouteSeries:
        return RouteSeries(self, route)

    def observe_plugin(self, route: Route, plugin: str, operation: str, seconds: float, allowed: bool) -> None:
        key = (route.path, plugin, operation, allowed)
        found = self._tallies.get(key)
        if found is None:
            found = self._tallies[key] = HistogramTally(
                self.plugin_duration.labels(
                    route.webhook_type, route.object_type, operation, plugin, "allowed" if allowed else "rejected"
                )
            )
        found.observe(seconds * 1000)

    def count_profile_matches(self, profiles: Sequence[str]) -> None:
        by_profile = self._profile_tallies
        for profile in profiles:
            tally = by_profile.get(profile)
            if tally is None:
                tally = by_profile[profile] = self.tally(self.profile_matches, profile)
            tally.pending += 1

    def flush(self) -> None:
        """Hand every tally to prometheus_client (on the event loop, like every write to them)."""
        for tally in self._tallies.values():
            tally.flush()

    async def flush_periodically(self, interval: float = FLUSH_INTERVAL) -> None:
        """For multiprocess mode: other workers' scrapes read our files, not our tallies."""
        while True:
            await asyncio.sleep(interval)
            self.flush()

    def count_warn_only(self, warnings: Sequence[ProfileWarning]) -> None:
        for warning in warnings:
            self.warn_only.labels(warning.profile, warning.outcome).inc()

    def render(self) -> bytes:
        self.flush()
        return generate_latest(self.registry)

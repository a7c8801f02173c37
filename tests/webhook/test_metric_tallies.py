"""Tallied series (counted without locks, flushed in batches) scrape exactly as per-call updates would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from webhook.metrics import CounterTally, GaugeTally, HistogramTally, WebhookMetrics
from webhook.registry import default_routes

BUCKETS = (0.001, 0.01, 0.1, 1.0)
#: on a bound, between bounds, below the first, past the last
VALUES = (0.0, 0.0005, 0.001, 0.002, 0.01, 0.5, 1.0, 7.0, 0.001, 1e9)


def _pair() -> tuple[CollectorRegistry, CollectorRegistry]:
    return CollectorRegistry(), CollectorRegistry()


def test_a_tallied_histogram_scrapes_like_one_observed_call_by_call():
    direct_registry, tallied_registry = _pair()
    direct = Histogram("h", "h", ["x"], buckets=BUCKETS, registry=direct_registry).labels("a")
    tally = HistogramTally(Histogram("h", "h", ["x"], buckets=BUCKETS, registry=tallied_registry).labels("a"))
    for round_ in range(2):  # a second batch adds to the first
        for value in VALUES:
            direct.observe(value)
            tally.observe(value)
        assert generate_latest(tallied_registry) != generate_latest(direct_registry)  # not flushed yet
        tally.flush()
        assert _samples(tallied_registry) == _samples(direct_registry), round_


def test_tallied_counters_and_gauges_add_their_net_change_on_flush():
    direct_registry, tallied_registry = _pair()
    counter = Counter("c", "c", registry=direct_registry)
    gauge = Gauge("g", "g", registry=direct_registry)
    counter_tally = CounterTally(Counter("c", "c", registry=tallied_registry))
    gauge_tally = GaugeTally(Gauge("g", "g", registry=tallied_registry))
    for _ in range(5):
        counter.inc()
        counter_tally.inc()
        gauge.inc()
        gauge_tally.inc()
    gauge.dec(2)
    gauge_tally.dec(2)
    counter_tally.flush()
    gauge_tally.flush()
    assert _samples(tallied_registry) == _samples(direct_registry)


def test_a_scrape_flushes_first_so_one_process_scrapes_exactly():
    metrics = WebhookMetrics()
    route = next(r for r in default_routes().routes if r.path == "/mutate-pod")
    series = metrics.route_series(route)
    series.requests_ok.inc()
    series.latency.observe(0.002)
    metrics.observe_plugin(route, "ClusterColocationProfile", "CREATE", 0.00001, True)
    metrics.count_profile_matches(["p1", "p1"])
    text = metrics.render().decode()
    assert 'controller_runtime_webhook_requests_total{code="200",webhook="/mutate-pod"} 1.0' in text
    assert 'controller_runtime_webhook_latency_seconds_count{webhook="/mutate-pod"} 1.0' in text
    assert 'colocate_profile_matches_total{profile="p1"} 2.0' in text
    assert 'plugin_name="ClusterColocationProfile"' in text


def _samples(registry: CollectorRegistry) -> list[tuple[str, list[tuple[str, str]], float]]:
    return sorted(
        (s.name, sorted(s.labels.items()), s.value)
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    )

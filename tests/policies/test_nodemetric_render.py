"""`render_node_metric` is the inverse of `read_node_metric`: a NodeMetric rendered from a reading
reads back as that very reading, so the reading can be handed to the cache instead of being parsed
(`colocate whatif`'s sampler writes every node's NodeMetric this way each step)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.apis.nodemetric import (
    DEFAULT_REPORT_INTERVAL_SECONDS,
    AggregatedUsage,
    HostApplicationMetric,
    NodeMetricReading,
    PodMetric,
    read_node_metric,
    render_node_metric,
)

RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", "hugepages-2Mi", "kubernetes.io/batch-cpu", "nvidia.com/gpu")
amount = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.sampled_from([0, 1, 999, 1000, 1500, 1024, 1 << 30, 3 * (1 << 30) + 1, 10**12, 2**63 - 1]),
)
amounts = st.dictionaries(st.sampled_from(RESOURCES), amount, max_size=4)
some_amounts = st.dictionaries(st.sampled_from(RESOURCES), amount, min_size=1, max_size=4)
label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12)
name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", max_size=12)
pods = st.builds(
    PodMetric,
    key=st.builds(lambda ns, n: f"{ns}/{n}", label, name),
    priority=st.sampled_from(["", "koord-prod", "koord-batch", "koord-mid", "koord-free"]),
    usage=st.one_of(st.none(), some_amounts),
    qos=st.sampled_from(["", "LSE", "LSR", "LS", "BE", "SYSTEM"]),
)
host_applications = st.builds(
    HostApplicationMetric,
    name=st.one_of(st.just(""), label),
    priority=st.sampled_from(["", "koord-prod", "koord-batch"]),
    qos=st.sampled_from(["", "LS", "BE"]),
    usage=amounts,
)
windows = st.one_of(
    st.sampled_from([0.0, 1.0, 60.0, 300.0, 1800.0, 3600.0, 86400.0]),
    st.integers(min_value=0, max_value=10**6).map(float),
)
aggregated = st.builds(
    AggregatedUsage, duration=windows, usage=st.dictionaries(st.sampled_from(["avg", "p50", "p95", "p99"]), amounts)
)


@st.composite
def readings(draw: st.DrawFn) -> NodeMetricReading:
    has_node_metric = draw(st.booleans())
    return NodeMetricReading(
        update_time=draw(st.one_of(st.none(), st.sampled_from(["2026-01-01T00:00:00Z", "2026-11-27T07:16:07Z"]))),
        report_interval_seconds=DEFAULT_REPORT_INTERVAL_SECONDS,
        has_node_metric=has_node_metric,
        node_usage=draw(amounts) if has_node_metric else None,
        system_usage=draw(amounts) if has_node_metric else {},
        aggregated=tuple(draw(st.lists(aggregated, max_size=3))) if has_node_metric else (),
        pods=tuple(draw(st.lists(pods, max_size=6))),
        host_applications=tuple(draw(st.lists(host_applications, max_size=3))),
        prod_reclaimable=draw(st.one_of(st.none(), amounts)),
    )


def _parsed(metric: dict[str, Any]) -> NodeMetricReading:
    """The reading of the object as an API server would hand it back: a JSON copy, which the cache
    has never seen, so it is parsed."""
    return read_node_metric(json.loads(json.dumps(metric)))


@settings(max_examples=1500, deadline=None)
@given(reading=readings())
def test_a_rendered_node_metric_reads_back_as_its_reading(reading: NodeMetricReading) -> None:
    metric = render_node_metric("node-a", reading)

    # the cache holds that reading for the rendered object itself: nothing is parsed
    assert read_node_metric(metric) is reading
    assert _parsed(metric) == reading


@settings(max_examples=300, deadline=None)
@given(reading=readings(), interval=st.integers(min_value=1, max_value=3600))
def test_a_rendered_status_on_a_stored_node_metric_keeps_its_spec(reading: NodeMetricReading, interval: int) -> None:
    current = {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": "node-a", "resourceVersion": "7"},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": interval}},
        "status": {"updateTime": "2020-01-01T00:00:00Z"},
    }

    metric = render_node_metric("node-a", reading, current)

    assert metric["spec"] is current["spec"] and metric["metadata"] is current["metadata"]
    assert current["status"] == {"updateTime": "2020-01-01T00:00:00Z"}  # the stored object is not edited
    expected = replace(reading, report_interval_seconds=interval)
    assert read_node_metric(metric) == expected
    assert _parsed(metric) == expected


def test_the_sampler_shape_is_what_the_koordlet_reports() -> None:
    reading = NodeMetricReading(
        update_time="2026-01-01T00:01:00Z",
        report_interval_seconds=DEFAULT_REPORT_INTERVAL_SECONDS,
        has_node_metric=True,
        node_usage={"cpu": 5500, "memory": 3 << 30},
        system_usage={"cpu": 1000, "memory": 1 << 30},
        aggregated=(),
        pods=(PodMetric("web/web-0", "", {"cpu": 4500, "memory": 2 << 30}),),
    )

    assert render_node_metric("node-a", reading) == {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": "node-a"},
        "status": {
            "updateTime": "2026-01-01T00:01:00Z",
            "nodeMetric": {
                "nodeUsage": {"resources": {"cpu": "5500m", "memory": "3Gi"}},
                "systemUsage": {"resources": {"cpu": "1", "memory": "1Gi"}},
            },
            "podsMetric": [
                {"namespace": "web", "name": "web-0", "podUsage": {"resources": {"cpu": "4500m", "memory": "2Gi"}}}
            ],
        },
    }


BASE = NodeMetricReading(None, DEFAULT_REPORT_INTERVAL_SECONDS, True, {}, {}, (), ())


@pytest.mark.parametrize(
    ("reading", "message"),
    [
        (replace(BASE, pods=(PodMetric("no-namespace", "", None),)), "not namespace/name"),
        (replace(BASE, pods=(PodMetric("/name", "", None),)), "not namespace/name"),
        (replace(BASE, pods=(PodMetric("ns/name", "", {}),)), "empty usage"),
        (replace(BASE, update_time=""), "empty updateTime"),
        (replace(BASE, node_usage=None), "nodeUsage"),
        (replace(BASE, has_node_metric=False), "without a nodeMetric"),
        (replace(BASE, aggregated=(AggregatedUsage(0.0001, {}),)), "no exact duration"),
    ],
)
def test_a_reading_no_status_reads_as_is_refused(reading: NodeMetricReading, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_node_metric("node-a", reading)

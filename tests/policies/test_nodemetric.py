"""The one NodeMetric reader: what the scheduler's LoadAware and the descheduler's LowNodeLoad see."""

from __future__ import annotations

import pytest

from policies.apis.nodemetric import HostApplicationMetric, read_node_metric
from policies.apis.quantity import QuantityError
from tests.support.builders import METRIC_TIME, make_metric, pod_metric


def test_usage_is_read_as_scalars_with_pods_and_system_usage() -> None:
    reading = read_node_metric(
        make_metric(
            "n1",
            cpu="1500m",
            memory="2Gi",
            system={"cpu": "250m"},
            pods=[pod_metric("p1", cpu="1", memory="1Gi"), pod_metric("p2", "ns", cpu="200m", priority="koord-batch")],
        )
    )
    assert reading.update_time == METRIC_TIME
    assert reading.has_node_metric
    assert reading.node_usage == {"cpu": 1500, "memory": 2 * 1024**3}
    assert reading.system_usage == {"cpu": 250}
    assert [(p.key, p.priority, p.usage) for p in reading.pods] == [
        ("default/p1", "koord-prod", {"cpu": 1000, "memory": 1024**3}),
        ("ns/p2", "koord-batch", {"cpu": 200, "memory": 0}),
    ]


def test_a_pod_entry_without_resources_has_no_usage_and_a_host_application_keeps_its_class() -> None:
    metric = make_metric("n1", cpu="1", memory="1Gi")
    metric["status"]["podsMetric"] = [
        {"name": "bare"},
        {"namespace": "ns", "name": "empty", "podUsage": {}},
        {"namespace": "ns", "name": "none", "podUsage": {"resources": {}}, "priority": "koord-mid"},
    ]
    metric["status"]["hostApplicationMetric"] = [
        {"priority": "koord-batch", "usage": {"resources": {"cpu": "2"}}},
        {"name": "nginx", "qos": "LS", "usage": {"resources": {"memory": "1Mi"}}},
    ]
    reading = read_node_metric(metric)
    assert [(p.key, p.priority, p.usage) for p in reading.pods] == [
        ("default/bare", "", None),
        ("ns/empty", "", None),
        ("ns/none", "koord-mid", None),
    ]
    assert reading.host_applications == (
        HostApplicationMetric("", "koord-batch", "", {"cpu": 2000}),
        HostApplicationMetric("nginx", "", "LS", {"memory": 1 << 20}),
    )


def test_a_malformed_pod_quantity_is_an_error() -> None:
    with pytest.raises(QuantityError):
        read_node_metric(make_metric("n1", pods=[pod_metric("p1", cpu="lots")]))


def test_a_metric_without_node_metric_or_update_time_says_so() -> None:
    reading = read_node_metric(make_metric("n1", update_time=None, no_node_metric=True, report_interval=None))
    assert (reading.has_node_metric, reading.node_usage, reading.update_time) == (False, None, None)
    assert reading.report_interval_seconds == 60


def test_aggregated_usages_keep_their_duration() -> None:
    reading = read_node_metric(
        make_metric("n1", aggregated=[{"duration": "5m", "usage": {"p95": {"resources": {"cpu": "3"}}}}])
    )
    assert [(a.duration, dict(a.usage)) for a in reading.aggregated] == [(300.0, {"p95": {"cpu": 3000}})]


def test_a_malformed_quantity_is_an_error() -> None:
    with pytest.raises(QuantityError):
        read_node_metric(make_metric("n1", cpu="lots"))


def test_a_replaced_metric_is_read_again_and_a_shallow_copy_shares_the_reading() -> None:
    """The reading is kept per node while its spec and status are the objects read: the scheduler's
    shallow copy of a stored NodeMetric reads the same, the koordlet's next report (a new object)
    is read anew, and two nodes never share a reading."""
    first = make_metric("n1", cpu="1")
    assert read_node_metric(dict(first)) is read_node_metric(first)
    assert read_node_metric(make_metric("n2", cpu="3")).node_usage == {"cpu": 3000, "memory": 0}
    assert read_node_metric(make_metric("n1", cpu="2")).node_usage == {"cpu": 2000, "memory": 0}
    assert read_node_metric(first).node_usage == {"cpu": 1000, "memory": 0}

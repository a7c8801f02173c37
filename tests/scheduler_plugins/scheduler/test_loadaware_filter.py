"""LoadAwareScheduling Filter (Koordinator's `pkg/scheduler/plugins/loadaware/load_aware.go`),
table-driven over small clusters."""

import json

import pytest

from tests.support.builders import make_metric, make_node, make_pod
from tests.support.scheduling import filter_node, plugin_of

LA = "LoadAwareScheduling"
SMALL = {"cpu": "1", "memory": "1Gi"}  # estimate: 850m cpu, ~717Mi memory
POD = make_pod(qos="LS", requests=SMALL, limits=SMALL)


def run(metric, args=None, pod=POD, node=None, now="2024-05-01T10:01:00Z"):
    objects = [node or make_node(cpu="100", memory="1000Gi")] + ([metric] if metric else [])
    plugin, cluster = plugin_of(objects, LA, args, now)
    status = filter_node(plugin, cluster, pod)
    return status.code.name, list(status.reasons)


OK = ("Success", [])
CPU_OVER = ("Unschedulable", ["node(s) cpu usage exceed threshold"])
EXPIRED = ("Unschedulable", ["node(s) nodeMetric expired"])


@pytest.mark.parametrize(
    "case, metric, args, expected",
    [
        ("65.4% rounds to 65 and passes (comparison is >)", make_metric(cpu="64550m"), None, OK),
        ("65.5% rounds to 66 and fails", make_metric(cpu="64650m"), None, CPU_OVER),
        ("no NodeMetric: nodes without koordlet are never rejected", None, None, OK),
        ("status.nodeMetric missing", make_metric(no_node_metric=True), None, OK),
        ("metric 60s old is fresh", make_metric(cpu="90"), None, CPU_OVER),
        ("metric exactly 180s old is expired", make_metric(update_time="2024-05-01T09:58:00Z"), None, EXPIRED),
        ("metric 179s old is fresh", make_metric(update_time="2024-05-01T09:58:01Z"), None, OK),
        ("no updateTime counts as expired", make_metric(update_time=None), None, EXPIRED),
        (
            "expired but scheduling allowed",
            make_metric(update_time="2024-05-01T09:00:00Z"),
            {"enableScheduleWhenNodeMetricsExpired": True},
            OK,
        ),
        (
            "expired metrics not filtered: thresholds still apply",
            make_metric(cpu="90", update_time="2024-05-01T09:00:00Z"),
            {"filterExpiredNodeMetrics": False},
            CPU_OVER,
        ),
        (
            "explicit {memory: 0} disables cpu filtering too",
            make_metric(cpu="99"),
            {"usageThresholds": {"memory": 0}},
            OK,
        ),
        ("all-zero thresholds pass", make_metric(cpu="99"), {"usageThresholds": {"cpu": 0, "memory": 0}}, OK),
        ("first failing resource in sorted order wins", make_metric(cpu="99", memory="999Gi"), None, CPU_OVER),
        (
            "memory over threshold",
            make_metric(cpu="1", memory="960Gi"),
            None,
            ("Unschedulable", ["node(s) memory usage exceed threshold"]),
        ),
    ],
)
def test_filter(case, metric, args, expected):
    assert run(metric, args) == expected, case


def test_daemonset_pods_are_never_rejected():
    pod = make_pod(qos="LS", requests=SMALL, limits=SMALL, owner_kind="DaemonSet")
    assert run(make_metric(cpu="99"), pod=pod) == OK


def test_node_annotation_replaces_thresholds_and_bad_json_is_ignored():
    metric = make_metric(cpu="50")
    strict = make_node(
        cpu="100",
        memory="1000Gi",
        annotations={"scheduling.koordinator.sh/usage-thresholds": json.dumps({"usageThresholds": {"cpu": 40}})},
    )
    broken = make_node(cpu="100", memory="1000Gi", annotations={"scheduling.koordinator.sh/usage-thresholds": "{nope"})
    assert run(metric, node=strict) == CPU_OVER
    assert run(metric, node=broken) == OK


def test_prod_thresholds_judge_prod_pods_on_prod_usage_only():
    # node is 90% busy overall, but prod pods only use 10 cores of it
    prod_pod_metric = {
        "name": "old",
        "namespace": "default",
        "priority": "koord-prod",
        "podUsage": {"resources": {"cpu": "10", "memory": "1Gi"}},
    }
    old = make_pod("old", qos="LS", priority=9500, requests=SMALL, node="node-1", scheduled_at="2024-05-01T08:00:00Z")
    metric = make_metric(cpu="90", pods=[prod_pod_metric])
    args = {"prodUsageThresholds": {"cpu": 50}}
    objects = [make_node(cpu="100", memory="1000Gi"), metric, old]
    plugin, cluster = plugin_of(objects, LA, args)
    assert filter_node(plugin, cluster, POD).is_success  # prod pod: 10 + 0.85 cores
    batch = make_pod("b", qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": "1000"})
    assert filter_node(plugin, cluster, batch).reasons == ("node(s) cpu usage exceed threshold",)


def test_aggregated_thresholds_use_the_aggregated_usage_and_say_so():
    aggregated = [{"duration": "5m0s", "usage": {"p95": {"resources": {"cpu": "80", "memory": "1Gi"}}}}]
    args = {
        "aggregated": {"usageThresholds": {"cpu": 70}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m"}
    }
    status = run(make_metric(cpu="10", aggregated=aggregated), args)
    assert status == ("Unschedulable", ["node(s) cpu aggregated usage exceed threshold"])


def test_raw_allocatable_annotation_is_the_capacity_judged_against():
    # allocatable amplified to 200 cores, but the raw capacity is 100
    node = make_node(cpu="200", memory="1000Gi", raw_allocatable={"cpu": "100"})
    assert run(make_metric(cpu="70"), node=node) == CPU_OVER
    assert run(make_metric(cpu="70"), node=make_node(cpu="200", memory="1000Gi")) == OK

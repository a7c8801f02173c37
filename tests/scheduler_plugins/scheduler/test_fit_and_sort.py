"""QoS-aware fit (BE pods against batch allocatable) and the priority queue order."""

import pytest

from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_node, make_pod
from tests.support.scheduling import filter_node, make_framework, plugin_of, score_node

FIT = "NodeResourcesFit"
BATCH = {"kubernetes.io/batch-cpu": "8000", "kubernetes.io/batch-memory": "16Gi"}


def fit(pod, placed=(), node=None):
    plugin, cluster = plugin_of([node or make_node(cpu="16", memory="64Gi", extra=BATCH), *placed], FIT)
    status = filter_node(plugin, cluster, pod)
    return status.code.name, list(status.reasons)


@pytest.mark.parametrize(
    "case, pod, placed, expected",
    [
        ("LS pod fits against regular cpu", make_pod(qos="LS", requests={"cpu": "12"}), [], ("Success", [])),
        (
            "LS pod too big for regular cpu",
            make_pod(qos="LS", requests={"cpu": "17"}),
            [],
            ("Unschedulable", ["Insufficient cpu"]),
        ),
        (
            "BE pod requesting batch-cpu fits the batch allocatable",
            make_pod(qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": "8000"}),
            [],
            ("Success", []),
        ),
        (
            "BE pod beyond batch allocatable though regular cpu is free",
            make_pod(qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": "9000"}),
            [],
            ("Unschedulable", ["Insufficient kubernetes.io/batch-cpu"]),
        ),
        (
            "un-rewritten BE pod's cpu is judged as batch-cpu",
            make_pod(qos="BE", priority=5500, requests={"cpu": "9"}),
            [],
            ("Unschedulable", ["Insufficient kubernetes.io/batch-cpu"]),
        ),
        (
            "batch usage of placed BE pods counts",
            make_pod(qos="BE", priority=5500, requests={"kubernetes.io/batch-memory": "10Gi"}),
            [make_pod("old", qos="BE", priority=5500, requests={"cpu": "1", "memory": "8Gi"}, node="node-1")],
            ("Unschedulable", ["Insufficient kubernetes.io/batch-memory"]),
        ),
        (
            "LS pods do not consume batch",
            make_pod(qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": "8000"}),
            [make_pod("old", qos="LS", requests={"cpu": "15"}, node="node-1")],
            ("Success", []),
        ),
        (
            "every insufficient resource is reported",
            make_pod(qos="LS", requests={"cpu": "17", "memory": "65Gi"}),
            [],
            ("Unschedulable", ["Insufficient cpu", "Insufficient memory"]),
        ),
        (
            "extended resource the node lacks",
            make_pod(qos="LS", requests={"nvidia.com/gpu": "1"}),
            [],
            ("Unschedulable", ["Insufficient nvidia.com/gpu"]),
        ),
    ],
)
def test_fit(case, pod, placed, expected):
    assert fit(pod, placed) == expected, case


def test_too_many_pods():
    node = make_node(cpu="16", memory="64Gi")
    node["status"]["allocatable"]["pods"] = "1"
    assert fit(make_pod(qos="LS"), [make_pod("old", node="node-1")], node=node) == ("Unschedulable", ["Too many pods"])


def test_least_allocated_score_uses_non_zero_requests():
    plugin, cluster = plugin_of([make_node(cpu="10", memory="10Gi")], FIT)
    # empty pod counts 100m cpu and 200Mi memory: cpu 99, memory 98 -> 98
    assert score_node(plugin, cluster, make_pod()) == (99 + 98) // 2


def test_queue_orders_by_priority_then_sub_priority_then_creation():
    pods = [
        make_pod("batch", priority=5500, created="2024-01-01T00:00:00Z"),
        make_pod("prod-late", priority=9500, created="2024-01-02T00:00:00Z"),
        make_pod("prod-early", priority=9500, created="2024-01-01T00:00:00Z"),
        make_pod("prod-sub", priority=9500, labels={"koordinator.sh/priority": "10"}, created="2024-01-03T00:00:00Z"),
        make_pod("mid-by-label", priority_class="koord-mid"),
    ]
    fwk, _ = make_framework([])
    order = [p.name for p in fwk.sort_pods([PodInfo(p) for p in pods])]
    assert order == ["prod-sub", "prod-early", "prod-late", "mid-by-label", "batch"]

"""The assign cache (Koordinator's `pkg/scheduler/plugins/loadaware/pod_assign_cache.go`): which
placed pods the reported usage already reflects."""

import pytest

from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_metric, make_node, make_pod, pod_metric
from tests.support.scheduling import plugin_of

LA = "LoadAwareScheduling"
REQ = {"cpu": "10", "memory": "10Gi"}  # estimate 8500m / 7Gi
NODE = make_node(cpu="100", memory="1000Gi")


def usage_cpu(objects, args=None):
    plugin, _ = plugin_of(objects, LA, args)
    usage = plugin.cache.estimated_usage("node-1", False, "", 0.0)
    return None if usage is None else usage[plugin.resources.index("cpu")]


@pytest.mark.parametrize(
    "case, placed, pods_metric, expected",
    [
        (
            "pod scheduled long before the metric, with usage: reflected, no delta",
            make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:00:00Z"),
            [pod_metric("a", cpu="2")],
            20000,
        ),
        (
            "pod newer than the metric window: estimate minus its usage is added",
            make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:59:30Z"),
            [pod_metric("a", cpu="2")],
            26500,
        ),
        (
            "pod without usage in the metric: full estimate added",
            make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:00:00Z"),
            [],
            28500,
        ),
        (
            "usage above the estimate never makes the delta negative",
            make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:59:30Z"),
            [pod_metric("a", cpu="9")],
            20000,
        ),
        (
            "terminated pods are not cached",
            make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:59:30Z", phase="Succeeded"),
            [],
            20000,
        ),
    ],
)
def test_assigned_pod_deltas(case, placed, pods_metric, expected):
    assert usage_cpu([NODE, make_metric(cpu="20", pods=pods_metric), placed]) == expected, case


def test_estimation_window_after_scheduling_keeps_counting_the_estimate():
    placed = make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:00:00Z")
    metric = make_metric(cpu="20", pods=[pod_metric("a", cpu="2")])
    assert usage_cpu([NODE, metric, placed], {"estimatedSecondsAfterPodScheduled": 7200}) == 26500
    assert usage_cpu([NODE, metric, placed], {"estimatedSecondsAfterPodScheduled": 600}) == 20000


def test_metric_without_node_usage_falls_back_to_the_sum_of_estimates():
    placed = make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:00:00Z")
    assert usage_cpu([NODE, make_metric(cpu=None, memory=None), placed]) == 8500


def test_no_metric_means_not_found():
    assert usage_cpu([NODE]) is None


def test_deleting_a_pod_subtracts_exactly_what_it_added():
    plugin, cluster = plugin_of([NODE, make_metric(cpu="20")], LA)
    idx = plugin.resources.index("cpu")
    first = PodInfo(make_pod("a", requests=REQ, node="node-1"))
    second = PodInfo(make_pod("b", requests=REQ, node="node-1"))
    cluster.bind(first, "node-1")
    cluster.bind(second, "node-1")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[idx] == 37000
    cluster.delete_pod("default/a")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[idx] == 28500
    cluster.bind(second, "node-1")  # a re-bind refreshes, never double counts
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[idx] == 28500


def test_a_new_metric_rebuilds_the_aggregates():
    plugin, cluster = plugin_of([NODE, make_metric(cpu="20"), make_pod("a", requests=REQ, node="node-1")], LA)
    idx = plugin.resources.index("cpu")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[idx] == 28500
    later = make_metric(cpu="30", update_time="2024-05-01T10:30:00Z", pods=[pod_metric("a", cpu="9")])
    cluster.set_node_metric(later)
    # the pod was assigned at "now" (10:01), which is before the new window (10:29): reflected
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[idx] == 30000
    cluster.delete_node_metric("node-1")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0) is None


def test_a_reserve_pod_reserved_on_a_node_adds_no_estimate():
    """`pod_assign_cache.go`: the cache holds bound or assumed pods, not reserve pods: scheduling a
    Reservation holds capacity for its owners, it puts no load on the node (the owner is counted
    once bound)."""
    from scheduler_plugins.scheduler.framework.cycle_state import CycleState
    from scheduler_plugins.scheduler.reservations import reserve_pod_object

    reservation = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "r1", "uid": "u1"},
        "spec": {
            "owners": [{"object": {"name": "owner", "namespace": "default"}}],
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": REQ}}]}},
        },
    }
    plugin, _ = plugin_of([NODE, make_metric(cpu="20")], LA)
    cpu = plugin.resources.index("cpu")
    plugin.reserve(CycleState(), PodInfo(reserve_pod_object(reservation)), "node-1")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[cpu] == 20000
    plugin.reserve(CycleState(), PodInfo(make_pod("a", requests=REQ)), "node-1")
    assert plugin.cache.estimated_usage("node-1", False, "", 0.0)[cpu] == 28500

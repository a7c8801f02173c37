"""LoadAwareScheduling Score (`load_aware.go`) and the estimator
(`estimator/default_estimator.go`)."""

import pytest

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.plugins.loadaware.estimator import estimate_resource
from scheduler_plugins.scheduler.plugins.loadaware.plugin import load_aware_score
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_metric, make_node, make_pod
from tests.support.scheduling import plugin_of, score_node

LA = "LoadAwareScheduling"
BIG = {"cpu": "16", "memory": "32Gi"}


def score(metric, args=None, pod=None, node=None, extra=()):
    objects = [node or make_node(cpu="96", memory="512Gi")] + ([metric] if metric else []) + list(extra)
    plugin, cluster = plugin_of(objects, LA, args)
    return score_node(plugin, cluster, pod or make_pod(requests=BIG, limits=BIG))


def test_worked_example_score_load_node():
    # cpu (96000-45600)*100/96000 = 52, memory (512Gi-32.4Gi)*100/512Gi = 93, (52+93)/2 = 72
    assert score(make_metric(cpu="32", memory="10Gi")) == 72


@pytest.mark.parametrize(
    "case, metric, expected",
    [
        ("no NodeMetric scores 0", None, 0),
        ("expired metric scores 0", make_metric(cpu="1", update_time="2024-05-01T09:00:00Z"), 0),
        ("no status.nodeMetric scores 0", make_metric(no_node_metric=True), 0),
    ],
)
def test_nodes_without_usable_metrics_score_zero(case, metric, expected):
    assert score(metric) == expected, case


def test_expired_metric_scores_zero_even_when_not_filtered():
    assert score(make_metric(cpu="1", update_time="2024-05-01T09:00:00Z"), {"filterExpiredNodeMetrics": False}) == 0


@pytest.mark.parametrize(
    "case, args, expected",
    [
        ("default weights cpu 1 memory 1", None, 72),
        ("cpu only: memory weight 0 is left out of the mean", {"resourceWeights": {"cpu": 1}}, 52),
        ("dominant only: the minimum over every resource", {"dominantResourceWeight": 1}, 52),
        (
            "dominant plus weights",
            {"dominantResourceWeight": 2, "resourceWeights": {"cpu": 1, "memory": 1}},
            (52 + 93 + 104) // 4,
        ),
    ],
)
def test_weights(case, args, expected):
    assert score(make_metric(cpu="32", memory="10Gi"), args) == expected, case


def test_dominant_term_counts_resources_the_node_does_not_have():
    # gpu in the vector with weight 0; the node has no gpu, so its least-used score is 0 and so is the minimum
    args = {
        "dominantResourceWeight": 1,
        "resourceWeights": {"cpu": 1},
        "estimatedScalingFactors": {"cpu": 85, "nvidia.com/gpu": 100},
    }
    assert score(make_metric(cpu="32", memory="10Gi"), args) == 52 // 2


@pytest.mark.parametrize(
    "used, cap, dw, weights, expected",
    [
        ([50, 50], [100, 100], 0, [1, 1], 50),
        ([150, 0], [100, 100], 0, [1, 1], 50),  # over capacity scores 0
        ([0, 0], [0, 0], 0, [0, 0], 0),  # weight sum 0
        ([10, 90], [100, 100], 1, [0, 0], 10),
    ],
)
def test_load_aware_score_formula(used, cap, dw, weights, expected):
    assert load_aware_score(dw, weights, used, cap) == expected


@pytest.mark.parametrize(
    "case, pod, resource, expected",
    [
        ("cpu request x 0.85, rounded", make_pod(requests={"cpu": "1"}), "cpu", 850),
        ("limit wins when above request", make_pod(requests={"cpu": "1"}, limits={"cpu": "3"}), "cpu", 2550),
        ("empty pod: 250m default", make_pod(), "cpu", 250),
        ("empty pod: 200Mi default", make_pod(), "memory", 200 * 1024 * 1024),
        ("rounding half away from zero", make_pod(requests={"cpu": "10m"}), "cpu", 9),  # 8.5 -> 9
        (
            "batch pod reads batch-cpu as millicores",
            make_pod(qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": "4000"}),
            "cpu",
            3400,
        ),
        ("mid pod with no mid-cpu gets 0, not the default", make_pod(priority=7500), "cpu", 0),
        ("free pod gets 0", make_pod(priority=3500), "cpu", 0),
    ],
)
def test_estimator(case, pod, resource, expected):
    assert estimate_resource(PodInfo(pod), resource, {"cpu": 85, "memory": 70}[resource]) == expected, case


def test_estimate_is_capped_at_the_limit():
    pod = PodInfo(make_pod(requests={"cpu": "1"}, limits={"cpu": "1"}))
    assert estimate_resource(pod, "cpu", 100) == 1000
    # a factor can't exceed 100 in args, but a pod annotation may ask for more; the limit still caps it
    assert estimate_resource(pod, "cpu", 150) == 1000


def test_pod_annotation_overrides_scaling_factors_only_when_allowed():
    pod = make_pod(
        requests=BIG,
        limits=BIG,
        annotations={"scheduling.koordinator.sh/load-estimated-scaling-factors": '{"cpu": 50}'},
    )
    metric = make_metric(cpu="32", memory="10Gi")
    # cpu estimate 8000m instead of 13600m: (96000-40000)*100/96000 = 58; memory unchanged 93
    assert score(metric, {"allowCustomizeEstimation": True}, pod=pod) == (58 + 93) // 2
    assert score(metric, None, pod=pod) == 72


def test_reserve_counts_the_pod_until_unreserve():
    plugin, cluster = plugin_of([make_node(cpu="96", memory="512Gi"), make_metric(cpu="32", memory="10Gi")], LA)
    before = score_node(plugin, cluster, make_pod("new", requests=BIG, limits=BIG))
    placed = PodInfo(make_pod("placed", requests=BIG, limits=BIG))
    plugin.reserve(CycleState(), placed, "node-1")
    during = score_node(plugin, cluster, make_pod("new", requests=BIG, limits=BIG))
    plugin.unreserve(CycleState(), placed, "node-1")
    plugin.unreserve(CycleState(), placed, "node-1")  # idempotent
    after = score_node(plugin, cluster, make_pod("new", requests=BIG, limits=BIG))
    assert during < before == after

"""LowNodeLoad end to end over one round (docs/descheduler.md): classification, the worked example, nodeFit,
victim order, pools, deviation thresholds, dry run."""

from __future__ import annotations

from typing import Any

from colocate.cluster.eviction import Outcome
from tests.scheduler_plugins.descheduler.helpers import (
    FakeEvents,
    FakeEvictions,
    config,
    evicted,
    loaded_node,
    run_rounds,
)
from tests.support.builders import make_metric, make_node, make_pod, pod_metric

IMMEDIATE = {"consecutiveAbnormalities": 1}
EXAMPLE_ARGS: dict[str, Any] = {
    "lowThresholds": {"cpu": 30, "pods": 30},
    "highThresholds": {"cpu": 50, "pods": 50},
    "anomalyCondition": IMMEDIATE,
}


def node(name: str, pods: int = 10, cpu: str = "4000m", unschedulable: bool = False) -> dict[str, Any]:
    made = make_node(name, allocatable={"cpu": cpu, "memory": "3000", "pods": str(pods)})
    if unschedulable:
        made["spec"] = {"unschedulable": True}
    return made


def worked_example() -> list[dict[str, Any]]:
    """Koordinator's TestLowNodeLoad "without priorities": n1 hot (8 pods x 400m), n2 cold, n3 empty
    but unschedulable."""
    pods, metric = loaded_node("n1", [(f"p{i}", "400m") for i in range(1, 9)])
    pods[5]["metadata"].pop("ownerReferences")  # p6: bare pod
    pods[6]["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]  # p7
    pods[7]["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]  # p8: local storage
    cold, cold_metric = loaded_node("n2", [("q1", "400m")])
    return [
        node("n1", pods=9),
        node("n2"),
        node("n3", unschedulable=True),
        *pods,
        *cold,
        metric,
        cold_metric,
        make_metric("n3", cpu="0", memory="0", update_time="2024-05-01T10:00:30Z"),
    ]


def test_the_worked_example_evicts_four_pods_that_fit_on_the_cold_node() -> None:
    events = FakeEvents()
    backend = FakeEvictions()
    [report] = run_rounds(config(EXAMPLE_ARGS), worked_example(), backend=backend, events=events)
    assert backend.evicted == ["default/p1", "default/p2", "default/p3", "default/p4"]
    classes = {entry.name: entry.classification for entry in report.nodes}
    assert classes == {"n1": "high", "n2": "bothLow", "n3": "none"}
    n1 = next(e for e in report.nodes if e.name == "n1")
    assert n1.usage["cpu"] == 80.0 and n1.pool == "__default_node_pool__"
    assert n1.thresholds == {"low": {"cpu": 30, "pods": 30}, "high": {"cpu": 50, "pods": 50}}
    first = report.evictions[0]
    assert (first.plugin, first.node) == ("LowNodeLoad", "n1")
    assert first.reason == (
        "node is overutilized, node cpu usage(80.00%)>threshold(50.00%), node pods usage(88.89%)>threshold(44.44%)"
    )
    assert [e[1] for e in events.events] == ["Descheduled"] * 4
    assert "LowNodeLoad" in events.events[0][2]


def test_dry_run_reports_the_same_evictions_and_evicts_nothing() -> None:
    backend = FakeEvictions()
    [report] = run_rounds(config(EXAMPLE_ARGS), worked_example(), backend=backend, dry_run=True)
    assert backend.evicted == []
    assert evicted([report]) == ["default/p1", "default/p2", "default/p3", "default/p4"]


def test_the_plugins_own_dry_run_evicts_nothing_either() -> None:
    backend = FakeEvictions()
    reports = run_rounds(config({**EXAMPLE_ARGS, "dryRun": True}), worked_example(), backend=backend)
    assert backend.evicted == [] and len(evicted(reports)) == 4


def test_without_node_fit_every_evictable_pod_is_a_candidate_until_headroom_runs_out() -> None:
    backend = FakeEvictions()
    run_rounds(config({**EXAMPLE_ARGS, "nodeFit": False}), worked_example(), backend=backend)
    assert len(backend.evicted) == 4  # pods available on n2: int(0.5 x 10) - 1 = 4


def test_a_disruption_budget_refusal_is_a_skip_with_its_reason_and_the_next_pod_is_tried() -> None:
    backend = FakeEvictions(refuse={"default/p1": Outcome.BLOCKED})
    [report] = run_rounds(config(EXAMPLE_ARGS), worked_example(), backend=backend)
    assert "default/p1" not in backend.evicted and len(backend.evicted) == 3
    assert report.skipped[0].pod == "default/p1"
    assert "disruption budget" in report.skipped[0].reason


def test_paused_does_nothing() -> None:
    [report] = run_rounds(config({**EXAMPLE_ARGS, "paused": True}), worked_example())
    assert report.evictions == [] and report.nodes == []


def test_low_priority_and_best_effort_pods_go_first_then_the_closest_to_the_excess() -> None:
    pods, metric = loaded_node("hot", [("prod-small", "500m"), ("prod-big", "1500m")])
    batch = make_pod("batch", node="hot", owner_kind="ReplicaSet", priority_class="koord-batch", qos="BE")
    metric["status"]["podsMetric"].append(pod_metric("batch", cpu="100m", priority="koord-batch"))
    cold, cold_metric = loaded_node("cold", [])
    objects = [node("hot", pods=110), node("cold", pods=110, cpu="8000m"), *pods, batch, *cold, metric, cold_metric]
    args = {"lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 40}, "anomalyCondition": IMMEDIATE}
    backend = FakeEvictions()
    run_rounds(config(args), objects, backend=backend)
    # hot: 2100m of 4000m (52.5 %), 500m over the 40 % threshold; the batch pod (100m) goes first,
    # then, of the prod pods, the one whose usage best matches the 500m excess (Koordinator's
    # mostRequestedScorePod: 500m scores 2, 1500m scores 1.33): 1500m left, 37.5 %
    assert backend.evicted == ["default/batch", "default/prod-small"]


def test_a_pod_that_fits_no_cold_node_by_selector_or_taint_stays() -> None:
    pods, metric = loaded_node("hot", [("pinned", "1000m"), ("tolerant", "1000m"), ("plain", "1000m")])
    pods[0]["spec"]["nodeSelector"] = {"disk": "ssd"}
    pods[1]["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    cold, cold_metric = loaded_node("cold", [])
    tainted = node("cold", pods=110)
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    args = {"lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 50}, "anomalyCondition": IMMEDIATE}
    backend = FakeEvictions()
    run_rounds(config(args), [node("hot", pods=110), tainted, *pods, *cold, metric, cold_metric], backend=backend)
    assert backend.evicted == ["default/tolerant"]


def test_nodes_without_a_fresh_node_metric_are_reported_and_not_classified() -> None:
    objects = worked_example()
    for obj in objects:
        if obj["kind"] == "NodeMetric" and obj["metadata"]["name"] == "n2":
            obj["status"]["updateTime"] = "2024-05-01T09:00:00Z"  # an hour old: expired
    backend = FakeEvictions()
    [report] = run_rounds(config(EXAMPLE_ARGS), objects, backend=backend)
    n2 = next(e for e in report.nodes if e.name == "n2")
    assert (n2.classification, n2.usage) == ("none", {}) and n2.note
    assert backend.evicted == []  # no cold node left to move to


def test_explicit_pools_are_processed_after_the_default_pool_and_skip_its_sources() -> None:
    objects = worked_example()
    for obj in objects:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"] = {"pool": "a"}
    args = {**EXAMPLE_ARGS, "nodePools": [{"name": "pool-a", "nodeSelector": {"matchLabels": {"pool": "a"}}}]}
    [report] = run_rounds(config(args), objects)
    pools = [(e.pool, e.name) for e in report.nodes]
    assert pools[:3] == [
        ("__default_node_pool__", "n1"),
        ("__default_node_pool__", "n2"),
        ("__default_node_pool__", "n3"),
    ]
    assert ("pool-a", "n1") not in pools and ("pool-a", "n2") in pools  # n1 was a source already


def test_deviation_thresholds_compare_each_node_with_the_pool_average() -> None:
    hot, hot_metric = loaded_node("hot", [("a", "2000m"), ("b", "1000m")])
    warm, warm_metric = loaded_node("warm", [("c", "1000m")])
    cold, cold_metric = loaded_node("cold", [])
    args = {
        "useDeviationThresholds": True,
        "lowThresholds": {"cpu": 10},
        "highThresholds": {"cpu": 10},
        "anomalyCondition": IMMEDIATE,
    }
    objects = [node(n, pods=110) for n in ("hot", "warm", "cold")] + [
        *hot,
        *warm,
        *cold,
        hot_metric,
        warm_metric,
        cold_metric,
    ]
    [report] = run_rounds(config(args), objects)
    # average 33.3 %: hot (75 %) > 43.3 % is high, cold (0 %) <= 23.3 % is low, warm (25 %) neither;
    # the unconfigured prod thresholds put every node under its prod "low" (capacity)
    assert {e.name: e.classification for e in report.nodes} == {"hot": "high", "warm": "prodLow", "cold": "bothLow"}
    # cold may take up to 43.3 % (1733m): `a` (2000m) fits nowhere, `b` (1000m) moves
    assert evicted([report]) == ["default/b"]


def test_a_node_whose_prod_pods_are_over_the_prod_high_threshold_sheds_prod_pods() -> None:
    hot, hot_metric = loaded_node("prod-hot", [("prod-1", "800m"), ("prod-2", "800m"), ("prod-3", "800m")])
    batch = make_pod("batch", node="prod-hot", owner_kind="ReplicaSet", priority_class="koord-batch", qos="BE")
    hot_metric["status"]["podsMetric"].append(pod_metric("batch", cpu="100m", priority="koord-batch"))
    cold, cold_metric = loaded_node("cold", [("c-1", "200m")])
    args = {
        "lowThresholds": {"cpu": 70},
        "highThresholds": {"cpu": 90},
        "prodLowThresholds": {"cpu": 20},
        "prodHighThresholds": {"cpu": 50},
        "anomalyCondition": IMMEDIATE,
    }
    backend = FakeEvictions()
    [report] = run_rounds(
        config(args),
        [node("prod-hot", pods=110), node("cold", pods=110), *hot, batch, *cold, hot_metric, cold_metric],
        backend=backend,
    )
    assert {e.name: e.classification for e in report.nodes} == {"prod-hot": "prodHigh", "cold": "bothLow"}
    # only prod pods are candidates of the prod pass; one brings prod usage from 60 % to 40 %
    assert backend.evicted == ["default/prod-1"]  # equal in every respect: the listed order
    assert report.evictions[0].reason == "node is overutilized, prod cpu usage(60.00%)>threshold(50.00%)"
    assert report.nodes[0].thresholds["prodHigh"] == {"cpu": 50}

"""LowNodeLoad against Koordinator's own cases: `TestLowNodeLoad` in
`pkg/descheduler/framework/plugins/loadaware/low_node_load_test.go` ("with priorities",
"without priorities evicting best-effort pods only"), transcribed: the same nodes
(`test.BuildTestNode(name, 4000, 3000, pods)`), pods (`test.BuildTestPod(name, 400, 0, node)`)
and NodeMetrics (`setupNodeMetrics`: each pod's usage is its request, so a best-effort pod is
listed with empty usage), nodeFit on, anomaly detection after one round."""

from __future__ import annotations

from typing import Any

from tests.scheduler_plugins.descheduler.helpers import FakeEvictions, config, run_rounds
from tests.support.builders import make_metric, make_node, make_pod

ARGS: dict[str, Any] = {
    "nodeFit": True,
    "lowThresholds": {"cpu": 30, "pods": 30},
    "highThresholds": {"cpu": 50, "pods": 50},
    "anomalyCondition": {"consecutiveAbnormalities": 1, "consecutiveNormalities": 1},
}
LOW_PRIORITY, HIGH_PRIORITY = 0, 10000
SYSTEM_CRITICAL = 2000000000


def build_node(name: str, pods: int, unschedulable: bool = False) -> dict[str, Any]:
    made = make_node(name, allocatable={"cpu": "4000m", "memory": "3000", "pods": str(pods)})
    if unschedulable:
        made["spec"] = {"unschedulable": True}
    return made


def build_pod(name: str, node: str, owner: str | None = "ReplicaSet", best_effort: bool = False, **kw: Any):
    requests = None if best_effort else {"cpu": "400m", "memory": "0"}
    return make_pod(name, node=node, owner_kind=owner, requests=requests, **kw)


def metrics(pods: list[dict[str, Any]], nodes: list[str]) -> list[dict[str, Any]]:
    """setupNodeMetrics: node usage is the sum of its pods' requests; every pod is listed."""
    out = []
    for node in nodes:
        mine = [p for p in pods if p["spec"].get("nodeName") == node]
        entries = []
        total = 0
        for pod in mine:
            requests = pod["spec"]["containers"][0].get("resources", {}).get("requests")
            entries.append(
                {
                    "name": pod["metadata"]["name"],
                    "namespace": pod["metadata"]["namespace"],
                    "podUsage": {"resources": {"cpu": requests["cpu"], "memory": "0"}} if requests else {},
                }
            )
            total += 400 if requests else 0
        metric = make_metric(node, cpu=f"{total}m", memory="0", update_time="2024-05-01T10:00:30Z")
        if entries:
            metric["status"]["podsMetric"] = entries
        out.append(metric)
    return out


def unevictable(node: str, **kw: Any) -> list[dict[str, Any]]:
    """p6 (a DaemonSet's), p7 (mirror pod with local storage), p8 (system critical)."""
    p6 = build_pod("p6", node, owner="DaemonSet", **kw)
    p7 = build_pod("p7", node, owner="Node", annotations={"kubernetes.io/config.mirror": "mirror"})
    p7["spec"]["volumes"] = [{"name": "sample", "hostPath": {"path": "somePath"}, "emptyDir": {"sizeLimit": "10"}}]
    p8 = build_pod("p8", node, namespace="kube-system", priority=SYSTEM_CRITICAL)
    return [p6, p7, p8]


def run(pods: list[dict[str, Any]]) -> list[str]:
    nodes = [build_node("n1", 9), build_node("n2", 10), build_node("n3", 10, unschedulable=True)]
    backend = FakeEvictions()
    run_rounds(config(ARGS), [*nodes, *pods, *metrics(pods, ["n1", "n2", "n3"])], backend=backend)
    return [key.partition("/")[2] for key in backend.evicted]


def test_with_priorities_the_low_priority_pod_goes_first():
    """TestLowNodeLoad "with priorities": 4 evicted, p5 (priority 0) among them, before any of
    the priority-10000 pods."""
    pods = [build_pod(f"p{i}", "n1", priority=HIGH_PRIORITY) for i in range(1, 5)]
    pods += [build_pod("p5", "n1", priority=LOW_PRIORITY), *unevictable("n1", priority=HIGH_PRIORITY)]
    pods.append(build_pod("p9", "n2"))
    got = run(pods)
    assert len(got) == 4
    assert got[0] == "p5"


def test_best_effort_pods_with_empty_usage_are_removable_and_go_first():
    """TestLowNodeLoad "without priorities evicting best-effort pods only": evictedPods p1, p2,
    p4, p5 — the best-effort pods, listed in the NodeMetric with empty usage."""
    pods = [build_pod(name, "n1", best_effort=name != "p3") for name in ("p1", "p2", "p3", "p4", "p5")]
    pods += [*unevictable("n1"), build_pod("p9", "n2")]
    assert sorted(run(pods)) == ["p1", "p2", "p4", "p5"]

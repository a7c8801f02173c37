"""`colocate whatif`'s scheduler queues pending pods as kube-scheduler does: a pod that fits nowhere
is not attempted every step, but when a pod ends on a node (or the 5-minute flush); while it
waits, each step still counts it with its last reason."""

from __future__ import annotations

from typing import Any

from colocate.cluster.store import ClusterStore
from colocate.whatif.components import SimClock, scheduler_over
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.registry import installed_registry


def _node() -> dict[str, Any]:
    amounts = {"cpu": "2", "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {}},
        "status": {"allocatable": amounts, "capacity": amounts},
    }


def _pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_a_pod_that_fits_nowhere_waits_for_a_pod_to_end_not_for_the_next_step() -> None:
    store = ClusterStore()
    store.replace("Node", [_node()])
    store.replace("Pod", [_pod("web", "n1"), _pod("job")])
    clock = SimClock(0.0)
    config = parse_config({}, installed_registry(), "KubeSchedulerConfiguration")
    runner = scheduler_over(store, config, clock)
    placements, _, waiting = runner.step()
    assert [(p.pod, p.scheduled) for p in placements] == [("default/job", False)]
    for minute in (1, 2, 3):
        clock.now = 60.0 * minute
        placements, _, waiting = runner.step()
        assert placements == []  # not attempted again
        assert [p.pod for p in waiting] == ["default/job"]
        assert "Insufficient cpu" in waiting[0].message
    store.delete("Pod", store.get("Pod", ("default", "web")) or {})
    clock.now = 240.0
    placements, _, waiting = runner.step()
    assert [(p.pod, p.node) for p in placements] == [("default/job", "n1")]
    assert waiting == []

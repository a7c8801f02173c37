"""The loop against the API-server stand-in: `manager run` writes batch resources into a node's
status from its NodeMetric; a pod the webhook turned into a BE pod then passes the extender's filter
on that node; when prod usage rises past the diff threshold the next round lowers the batch
allocatable and the pod no longer fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.scheduler.extender.service import ExtenderService
from tests.scheduler_plugins.manager.helpers import Manager, cluster, metric_value, node_status, prod_metric
from tests.support.admission import make_snapshot, mutate
from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod, make_profile
from tests.support.scheduling import make_framework
from tests.support.wait import wait_for

BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"


def be_pod() -> dict[str, Any]:
    """A plain pod the webhook's profile turns into a BE pod requesting batch resources."""
    profile = make_profile(
        "batch", selector={"matchLabels": {"tier": "batch"}}, qosClass="BE", priorityClassName="koord-batch"
    )
    pod = make_pod(
        "job",
        "shop",
        labels={"tier": "batch"},
        requests={"cpu": "10", "memory": "8Gi"},
        limits={"cpu": "10", "memory": "8Gi"},
    )
    mutated = mutate(pod, make_snapshot(profile))
    requests = mutated["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {BATCH_CPU: "10k", BATCH_MEMORY: "8Gi"}, mutated
    return mutated


def extender_filter(api: ApiServer, pod: dict[str, Any]) -> dict[str, Any]:
    """The extender's filter over the node as the stand-in holds it now."""
    node = api.store.get(api.by_kind["Node"], "", "node-1")
    metric = api.store.get(api.by_kind[NODE_METRIC_KIND], "", "node-1")
    fwk, state = make_framework([node, metric])
    result = ExtenderService(fwk, state).filter({"Pod": pod, "Nodes": {"items": [node]}})
    return dict(result)


async def test_manager_run_writes_batch_resources_and_the_scheduler_follows(api: ApiServer, kubeconfig: Path) -> None:
    for obj in cluster():
        api.apply(obj)
    assert BATCH_CPU not in node_status(api)["allocatable"]
    manager = Manager(kubeconfig).start()
    try:
        # 1. 32 cores - 40 % margin (12.8) - system 1 - prod usage 2 = 16.2 cores
        status = await wait_for(
            lambda: node_status(api),
            until=lambda s: BATCH_CPU in s["allocatable"],
            timeout=20,
            message="the batch resources in the node's status",
        )
        assert status["allocatable"][BATCH_CPU] == status["capacity"][BATCH_CPU] == "16200"
        assert BATCH_MEMORY in status["allocatable"] and status["allocatable"]["cpu"] == "32"
        # 2. the webhook's BE pod (10 batch cores) fits there
        pod = be_pod()
        fits = extender_filter(api, pod)
        assert fits["FailedNodes"] == {} and [n["metadata"]["name"] for n in fits["Nodes"]["items"]] == ["node-1"]
        # 3. prod usage rises to 10 cores: 32 - 12.8 - 1 - 10 = 8.2 cores, a 49 % drop (threshold 10 %)
        api.apply(prod_metric("10"))
        status = await wait_for(
            lambda: node_status(api),
            until=lambda s: s["allocatable"][BATCH_CPU] == "8200",
            timeout=20,
            message="the lowered batch-cpu",
        )
        refused = extender_filter(api, pod)
        assert "node-1" in refused["FailedNodes"]
        assert "kubernetes.io/batch-cpu" in refused["FailedNodes"]["node-1"]
        # the manager also owns one NodeSLO and one NodeMetric spec per node
        slo = api.store.get(api.by_kind["NodeSLO"], "", "node-1")
        assert slo["metadata"]["ownerReferences"][0]["kind"] == "Node"
        # ... and the NodeMetric's spec, which the test's write above replaced, is put back
        await wait_for(
            lambda: api.store.get(api.by_kind[NODE_METRIC_KIND], "", "node-1")["spec"]["metricCollectPolicy"],
            until=lambda policy: policy.get("aggregateDurationSeconds") == 300,
            timeout=20,
            message="the NodeMetric spec",
        )
        # a round counts its writes after the last of them (the NodeMetric spec above may be that one)
        text = await wait_for(
            manager.metrics,
            until=lambda t: metric_value(t, "colocate_manager_nodes_updated_total") == 2,
            timeout=20,
            message="two status writes counted",
        )
        assert "colocate_manager_calculation_duration_seconds_count" in text
    finally:
        await manager.stop()


async def test_a_small_change_is_not_written(api: ApiServer, kubeconfig: Path) -> None:
    """Within the diff threshold (and the update interval) the node's status is left alone."""
    for obj in cluster():
        api.apply(obj)
    manager = Manager(kubeconfig).start()
    try:
        await wait_for(
            lambda: node_status(api),
            until=lambda s: BATCH_CPU in s["allocatable"],
            timeout=20,
            message="the first write",
        )
        # the round is emitted once all its writes are done, after the status patch seen above
        rounds = len(await wait_for(lambda: manager.rounds, timeout=20, message="the first round"))
        api.apply(prod_metric("2.5"))  # 16.2 -> 15.7 cores: 3 %
        await wait_for(lambda: len(manager.rounds), until=lambda n: n > rounds, timeout=20, message="the next round")
        assert node_status(api)["allocatable"][BATCH_CPU] == "16200"
        assert metric_value(await manager.metrics(), "colocate_manager_nodes_skipped_total") >= 1
    finally:
        await manager.stop()

"""`manager run` against the stand-in: degrade, two replicas, a broken ConfigMap, health."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.scheduler_plugins.manager.helpers import (
    Manager,
    cluster,
    http_get,
    metric_value,
    node_status,
    prod_metric,
    slo_config,
)
from tests.support.apiserver import ApiServer
from tests.support.wait import wait_for

BATCH_CPU = "kubernetes.io/batch-cpu"
MID_CPU = "kubernetes.io/mid-cpu"


def events(api: ApiServer, reason: str) -> list[dict[str, Any]]:
    return [e for e in api.store.objects.get(api.by_kind["Event"], {}).values() if e.get("reason") == reason]


async def written(api: ApiServer) -> dict[str, Any]:
    return await wait_for(
        lambda: node_status(api),
        until=lambda s: BATCH_CPU in s["allocatable"],
        timeout=20,
        message="the batch resources in the node's status",
    )


async def test_a_stale_node_metric_removes_batch_and_mid_resources(api: ApiServer, kubeconfig: Path) -> None:
    """Degrade: a NodeMetric older than degradeTimeMinutes removes the node's batch and mid resources
    (they are deleted, not set to 0), with a Warning Event on the node and the gauge."""
    for obj in cluster():
        api.apply(obj)
    manager = Manager(kubeconfig).start()
    try:
        await written(api)
        stale = prod_metric("2")
        stale["status"]["updateTime"] = "2024-05-01T09:00:00Z"  # an hour before the manager's clock
        api.apply(stale)
        status = await wait_for(
            lambda: node_status(api),
            until=lambda s: BATCH_CPU not in s["allocatable"],
            timeout=20,
            message="the degrade",
        )
        assert BATCH_CPU not in status["capacity"] and MID_CPU not in status["allocatable"]
        assert status["allocatable"]["cpu"] == "32"
        # the Event and the gauge follow the status patch within the same round
        degraded = await wait_for(lambda: events(api, "NodeResourceDegraded"), timeout=20, message="the degrade Event")
        assert len(degraded) == 1 and degraded[0]["involvedObject"]["name"] == "node-1"
        assert "NodeMetric stale" in degraded[0]["message"]
        await wait_for(
            manager.metrics,
            until=lambda text: metric_value(text, "colocate_manager_degraded_nodes") == 1,
            timeout=20,
            message="the degraded-nodes gauge",
        )
    finally:
        await manager.stop()


async def test_two_replicas_only_the_leader_writes(api: ApiServer, kubeconfig: Path) -> None:
    for obj in cluster():
        api.apply(obj)
    first = Manager(kubeconfig, leader_elect=True).start()
    second = Manager(kubeconfig, leader_elect=True).start()
    try:
        await written(api)
        # the round counts its writes once all of them are done, after the status patch `written` saw
        texts = await wait_for(
            lambda: asyncio.gather(first.metrics(), second.metrics()),
            until=lambda t: (
                sorted(metric_value(x, "colocate_manager_leader") for x in t) == [0.0, 1.0]
                and sum(metric_value(x, "colocate_manager_nodes_updated_total") for x in t) >= 1
            ),
            ignore=(OSError, AssertionError),
            timeout=20,
            message="one leader, and its round counted",
        )
        leader, follower = (first, second) if metric_value(texts[0], "colocate_manager_leader") else (second, first)
        assert metric_value(texts[1 if leader is second else 0], "colocate_manager_nodes_updated_total") == 1
        assert follower.rounds == []
        assert metric_value(await follower.metrics(), "colocate_manager_nodes_updated_total") == 0
        lease = api.store.get(api.by_kind["Lease"], "koordinator-system", "koordinator-manager")
        assert lease["spec"]["holderIdentity"]
    finally:
        await first.stop()
        await second.stop()


async def test_a_broken_config_map_keeps_the_last_good_config(api: ApiServer, kubeconfig: Path) -> None:
    """A colocation-config that does not parse keeps the last good one in force: an Event on the
    ConfigMap, the config-error metric, and the node keeps (and keeps getting) real batch values."""
    for obj in cluster():
        api.apply(obj)
    manager = Manager(kubeconfig).start()
    try:
        assert (await written(api))["allocatable"][BATCH_CPU] == "16200"
        api.apply(slo_config('{"enable": true, "cpuReclaimThresholdPercent": "sixty"'))
        await wait_for(lambda: events(api, "ColocationCfgUnmarshalFailed"), timeout=20, message="the config Event")
        text = await manager.metrics()
        assert 'colocate_manager_config_errors_total{reason="ColocationCfgUnmarshalFailed"} 1.0' in text
        api.apply(prod_metric("10"))  # the next round still calculates with the last good config
        status = await wait_for(
            lambda: node_status(api),
            until=lambda s: s["allocatable"][BATCH_CPU] == "8200",
            timeout=20,
            message="a round under the last good config",
        )
        assert status["allocatable"][BATCH_CPU] != "0"
    finally:
        await manager.stop()


async def test_a_broken_config_map_at_start_writes_nothing(api: ApiServer, kubeconfig: Path) -> None:
    """No config ever parsed: the node's status is never written (no zero, no garbage)."""
    objects = cluster("{broken")
    for obj in objects:
        api.apply(obj)
    manager = Manager(kubeconfig).start()
    try:
        await wait_for(lambda: events(api, "ColocationCfgUnmarshalFailed"), timeout=20, message="the config Event")
        await wait_for(lambda: manager.rounds, timeout=20, message="a round")
        assert BATCH_CPU not in node_status(api)["allocatable"]
        assert api.writes("Node") == 0
        # the NodeSLO is rendered regardless; the NodeMetric is left alone until a config parses
        assert api.store.get(api.by_kind["NodeSLO"], "", "node-1")
    finally:
        await manager.stop()


async def test_health_and_readiness(api: ApiServer, kubeconfig: Path) -> None:
    for obj in cluster():
        api.apply(obj)
    manager = Manager(kubeconfig).start()
    try:
        await written(api)
        assert await asyncio.to_thread(http_get, manager.port, "/healthz") == (200, "ok")
        assert await asyncio.to_thread(http_get, manager.port, "/readyz") == (200, "ok")
    finally:
        await manager.stop()


async def test_zone_batch_resources_go_to_the_node_resource_topology(api: ApiServer, kubeconfig: Path) -> None:
    """The NUMA split is written to the NodeResourceTopology, never to the Node."""
    for obj in cluster():
        api.apply(obj)
    resources = [
        {"name": "cpu", "capacity": "16", "allocatable": "16", "available": "16"},
        {"name": "memory", "capacity": "64Gi", "allocatable": "64Gi", "available": "64Gi"},
    ]
    api.apply(
        {
            "apiVersion": "topology.node.k8s.io/v1alpha1",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "node-1"},
            "topologyPolicies": ["None"],
            "zones": [{"name": f"node-{i}", "type": "Node", "resources": resources} for i in range(2)],
        }
    )
    manager = Manager(kubeconfig).start()
    try:

        def zones() -> list[dict[str, Any]]:
            return list(api.store.get(api.by_kind["NodeResourceTopology"], "", "node-1")["zones"])

        found = await wait_for(
            zones, until=lambda z: len(z[0]["resources"]) == 4, timeout=20, message="the zone batch resources"
        )
        # per zone: 16 - 6.4 - 0.5 (half the system usage) - 1 (half the prod usage) = 8.1 cores
        assert found[0]["resources"][1] == {
            "name": BATCH_CPU,
            "capacity": "8100",
            "allocatable": "8100",
            "available": "8100",
        }
        assert [r["name"] for r in found[1]["resources"]] == ["cpu", BATCH_CPU, "kubernetes.io/batch-memory", "memory"]
    finally:
        await manager.stop()

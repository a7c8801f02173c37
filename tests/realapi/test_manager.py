"""`colocate manager run` against the real API server: a node's batch and mid resources, its NodeSLO
and its NodeMetric's collect policy are written where kubectl and the scheduler read them, with the
same amounts the stand-in gives (tests/scheduler_plugins/manager/test_controller.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.scheduler_plugins.manager.helpers import Manager, slo_config
from tests.support.builders import make_metric, make_pod, pod_metric
from tests.support.realapi import RealApi
from tests.support.wait import wait_for

pytestmark = pytest.mark.realapi

BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
MID_CPU = "kubernetes.io/mid-cpu"
METRICS = "slo.koordinator.sh/v1alpha1"


@pytest.fixture
def manager_crds(realapi: RealApi) -> None:
    """The kinds the manager lists and writes, as the default install applies them."""
    realapi.install_crds("nodemetrics", "nodeslos", "noderesourcetopologies")


@pytest.fixture
def node(realapi: RealApi, realapi_namespace: str, manager_crds: None) -> Iterator[str]:
    """A 32-core node running one prod pod of the test's namespace, its NodeMetric reported (status
    through its subresource, as the koordlet writes it), and the slo-controller-config of
    tests/scheduler_plugins/manager/helpers.py."""
    name = f"manager-{realapi.run_id}"
    realapi.add_node(name, capacity={"cpu": "32", "memory": "128Gi", "pods": "110"})
    realapi.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "koordinator-system"}}])
    realapi.apply([slo_config()])
    web = make_pod("web", realapi_namespace, qos="LS", node=name, requests={"cpu": "8", "memory": "16Gi"})
    realapi.apply([web], realapi_namespace)
    metric = make_metric(
        name,
        cpu="12",
        memory="16Gi",
        system={"cpu": "1", "memory": "2Gi"},
        pods=[pod_metric("web", realapi_namespace, cpu="2", memory="4Gi")],
    )
    realapi.apply([metric])
    realapi.write_status(metric)
    try:
        yield name
    finally:
        for kind in ("NodeMetric", "NodeSLO"):
            realapi.delete(METRICS, kind, name)
        realapi.core.delete_node(name)


async def test_the_manager_writes_a_nodes_batch_and_mid_resources_its_nodeslo_and_collect_policy(
    realapi: RealApi, node: str
) -> None:
    manager = Manager(realapi.kubeconfig).start()
    try:
        status = await wait_for(
            lambda: asyncio.to_thread(lambda: realapi.core.read_node_status(node).status.allocatable),
            until=lambda allocatable: BATCH_CPU in (allocatable or {}),
            timeout=60,
            interval=0.2,
            message="the manager's batch resources in the Node's status",
        )
        slo: dict[str, Any] | None = await wait_for(
            lambda: asyncio.to_thread(realapi.get, METRICS, "NodeSLO", node),
            timeout=30,
            interval=0.2,
            message="the manager's NodeSLO",
        )
        metric = await asyncio.to_thread(realapi.get, METRICS, "NodeMetric", node)
    finally:
        await manager.stop()

    # the stand-in's figure for the same node, pod, usage and config (test_controller.py)
    assert status[BATCH_CPU] == "16200"
    assert BATCH_MEMORY in status and MID_CPU in status
    assert status["cpu"] == "32"  # the kubelet's own resources are left alone
    assert slo is not None and "resourceUsedThresholdWithBE" in slo["spec"]
    assert metric is not None and metric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 60
    assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "12"  # the koordlet's, kept

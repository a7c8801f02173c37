"""The koordlet against the real API server: it watches only its own node's objects, reports its
NodeMetric through the status subresource, and evicts a BE pod through the Eviction API the server
serves (1.20: `policy/v1beta1`), with an Event (tests/scheduler_plugins/koordlet/test_agent_live.py
does the same against the stand-in)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.kube import KubeSource
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings, watched_kinds
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.topology import flat_processors
from tests.scheduler_plugins.koordlet.test_agent_live import BE_DIR, fake_machine
from tests.support.builders import make_node_slo, make_pod
from tests.support.realapi import RealApi
from tests.support.wait import wait_for

pytestmark = pytest.mark.realapi

SLO = "slo.koordinator.sh/v1alpha1"


@pytest.fixture
def node(realapi: RealApi, realapi_namespace: str) -> Iterator[str]:
    """The agent's node with a NodeSLO (suppress at 50 %, evict BE at 70 % memory), an empty
    NodeMetric for it to report into, and a BE pod bound to it; a second node the agent ignores."""
    realapi.install_crds("nodemetrics", "nodeslos", "noderesourcetopologies")
    mine, other = f"koordlet-{realapi.run_id}", f"other-{realapi.run_id}"
    for name in (mine, other):
        realapi.add_node(name, capacity={"cpu": "8", "memory": "64Gi", "pods": "110"})
    threshold = {
        "enable": True,
        "cpuSuppressPolicy": "cfsQuota",
        "cpuSuppressThresholdPercent": 50,
        "memoryEvictThresholdPercent": 70,
    }
    realapi.apply([make_node_slo(mine, threshold=threshold)])
    spec = {"metricCollectPolicy": {"reportIntervalSeconds": 1, "aggregateDurationSeconds": 60}}
    realapi.apply([{"apiVersion": SLO, "kind": NODE_METRIC_KIND, "metadata": {"name": mine}, "spec": spec}])
    for pod_name, node_name in (("batch", mine), ("elsewhere", other)):
        pod = make_pod(pod_name, realapi_namespace, qos="BE", node=node_name)
        realapi.apply([pod], realapi_namespace)
    try:
        yield mine
    finally:
        for name in (mine, other):
            realapi.delete(SLO, "NodeSLO", name)
            realapi.delete(SLO, NODE_METRIC_KIND, name)
            realapi.core.delete_node(name)


async def test_the_agent_reports_and_evicts_through_the_real_api(
    realapi: RealApi, realapi_namespace: str, node: str, tmp_path: Path
) -> None:
    cg, proc = fake_machine(tmp_path, memory_used_percent=80)
    client = api_client(realapi.kubeconfig)
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    settings = AgentSettings(node, cg, proc=proc, only_evict_by_api=True)
    options = StrategyOptions(koordlet_gates("BEMemoryEvict=true"), memory_evict_cool_time=60)
    agent = Agent(settings, options, store, client, processors=flat_processors(8))
    source = KubeSource(client, watched_kinds(node), store, ReflectorSettings(watch_timeout=5))
    task = asyncio.create_task(agent.run(source.run))
    try:
        await wait_for(lambda: agent.ready(), timeout=30, message="the agent to sync and collect")
        assert {p["spec"]["nodeName"] for p in store.objects("Pod")} == {node}  # spec.nodeName=<its node> only
        quota = await wait_for(
            lambda: (cg / "cpu" / BE_DIR / "cpu.cfs_quota_us").read_text(),
            until=lambda text: text.strip() not in ("-1", ""),
            timeout=30,
            message="the BE quota to be written",
        )
        assert 2000 <= int(quota) <= 400_000

        def read_pod() -> Any:
            return realapi.get("v1", "Pod", "batch", realapi_namespace)

        await wait_for(
            lambda: asyncio.to_thread(read_pod),
            until=lambda pod: pod is None or bool(pod["metadata"].get("deletionTimestamp")),
            timeout=30,
            interval=0.2,
            message="the BE pod evicted through the Eviction API (80 % ≥ 70 %)",
        )
        events = await asyncio.to_thread(realapi.core.list_namespaced_event, realapi_namespace)
        assert any(e.reason == "evictPodSuccess" and e.involved_object.name == "batch" for e in events.items)
        metric: dict[str, Any] = await wait_for(
            lambda: asyncio.to_thread(realapi.get, SLO, NODE_METRIC_KIND, node),
            until=lambda m: bool((m or {}).get("status", {}).get("updateTime")),
            timeout=30,
            interval=0.2,
            message="the NodeMetric report",
        )
        assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"]
        assert metric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 1  # status only was written
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        source.close()

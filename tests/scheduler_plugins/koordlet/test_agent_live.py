"""The agent against the API-server stand-in: it watches only its node's objects, writes the
suppress quota on a (fake) cgroup tree, reports its NodeMetric, evicts through the Eviction API
with an Event, and serves /healthz, /readyz and /metrics."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path
from typing import Any

from colocate.cluster.client import api_client
from colocate.cluster.kube import KubeSource
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings, watched_kinds
from scheduler_plugins.koordlet.command import agent_probes
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.topology import flat_processors
from tests.support.apiserver import ApiServer
from tests.support.builders import make_node, make_node_slo, make_pod
from tests.support.wait import wait_for

BE_DIR = "kubepods/besteffort"


def fake_machine(root: Path, memory_used_percent: int) -> tuple[Path, Path]:
    cg, proc = root / "cg", root / "proc"
    for sub in ("cpu", "cpuacct", "cpuset", "memory"):
        (cg / sub / BE_DIR / "podbe-1").mkdir(parents=True)
    (cg / "cpu" / BE_DIR / "cpu.cfs_quota_us").write_text("-1\n")
    (cg / "cpu" / BE_DIR / "podbe-1" / "cpu.cfs_quota_us").write_text("-1\n")
    (cg / "cpuacct" / BE_DIR / "podbe-1" / "cpuacct.usage").write_text("0\n")
    (cg / "memory" / BE_DIR / "podbe-1" / "memory.usage_in_bytes").write_text(f"{2 * 1024**3}\n")
    proc.mkdir()
    (proc / "stat").write_text("cpu  100 0 0 100 0 0 0 0 0 0\n")
    total_kb = 64 * 1024**2
    (proc / "meminfo").write_text(
        f"MemTotal: {total_kb} kB\nMemAvailable: {total_kb * (100 - memory_used_percent) // 100} kB\n"
    )
    return cg, proc


def seed(api: ApiServer) -> None:
    api.apply(make_node("n1", capacity={"cpu": "8", "memory": "64Gi"}, allocatable={"cpu": "8", "memory": "64Gi"}))
    api.apply(make_node("n2", capacity={"cpu": "8", "memory": "64Gi"}))
    api.apply(
        make_node_slo(
            "n1",
            threshold={
                "enable": True,
                "cpuSuppressPolicy": "cfsQuota",
                "cpuSuppressThresholdPercent": 50,
                "memoryEvictThresholdPercent": 70,
            },
        )
    )
    be = make_pod("batch", node="n1", qos="BE", priority=5500, uid=True)
    api.apply(be)
    api.apply(make_pod("elsewhere", node="n2", qos="BE"))
    api.apply(
        {
            "apiVersion": "slo.koordinator.sh/v1alpha1",
            "kind": NODE_METRIC_KIND,
            "metadata": {"name": "n1"},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 1, "aggregateDurationSeconds": 60}},
        }
    )


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


async def test_the_agent_enforces_reports_and_evicts_through_the_api(
    api: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    seed(api)
    cg, proc = fake_machine(tmp_path, memory_used_percent=80)
    client = api_client(kubeconfig)
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    settings = AgentSettings("n1", cg, proc=proc, only_evict_by_api=True)
    options = StrategyOptions(koordlet_gates("BEMemoryEvict=true"), memory_evict_cool_time=60)
    agent = Agent(settings, options, store, client, processors=flat_processors(8))
    source = KubeSource(client, watched_kinds("n1"), store, ReflectorSettings(watch_timeout=5))
    probes = agent_probes(agent, "127.0.0.1", 0)
    await probes.start()
    base = f"http://127.0.0.1:{probes.ports[0]}"
    task = asyncio.create_task(agent.run(source.run))
    try:
        await wait_for(lambda: agent.ready(), message="the agent to sync and collect")
        assert store.get("Node", ("", "n1")) is not None and store.get("Node", ("", "n2")) is None
        assert all(p["spec"]["nodeName"] == "n1" for p in store.objects("Pod"))  # spec.nodeName=n1 only
        # 8 cores × 50 % − system (all of the node's usage is unexplained: at least 0) ⇒ at most 4 cores
        quota = await wait_for(
            lambda: (cg / "cpu" / BE_DIR / "cpu.cfs_quota_us").read_text(),
            until=lambda text: text.strip() not in ("-1", ""),
            message="the BE quota to be written",
        )
        assert 2000 <= int(quota) <= 400_000
        evicted = await wait_for(
            lambda: api.store.objects.get(api.by_kind["Pod"], {}).get(("default", "batch")),
            until=lambda pod: pod is None,
            message="the BE pod to be evicted (80 % ≥ 70 %)",
        )
        assert evicted is None
        await wait_for(
            lambda: [
                e
                for e in api.store.objects.get(api.by_kind["Event"], {}).values()
                if e["reason"] == "evictPodSuccess" and e["involvedObject"]["name"] == "batch"
            ],
            message="an Event about the eviction",
        )
        metric: dict[str, Any] = await wait_for(
            lambda: api.store.get(api.by_kind[NODE_METRIC_KIND], "", "n1"),
            until=lambda m: bool((m.get("status") or {}).get("updateTime")),
            message="the NodeMetric report",
        )
        assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"]
        assert metric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 1  # status only was written
        assert (await asyncio.to_thread(get, f"{base}/healthz"))[0] == 200
        assert (await asyncio.to_thread(get, f"{base}/readyz"))[0] == 200
        text = (await asyncio.to_thread(get, f"{base}/metrics"))[1]
        assert 'koordlet_cgroup_writes_total{file="cpu.cfs_quota_us",strategy="CPUSuppress"}' in text
        assert 'koordlet_evictions_total{outcome="evicted",strategy="MemoryEvict"} 1.0' in text
        assert "koordlet_be_suppress_cpu_cores" in text
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await probes.stop()
        source.close()

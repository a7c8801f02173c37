"""The loop with the scheduler: NodeMetrics the agent reports for a busy node make LoadAware filter
that node out in `colocate scheduler explain`, while the idle node is chosen."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.cluster.client import api_client
from colocate.cluster.store import ClusterStore
from colocate.main import main
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.clock import format_time
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.topology import flat_processors
from tests.support.apiserver import ApiServer
from tests.support.builders import make_node, make_pod

START = 1714557600.0  # 2024-05-01T10:00:00Z
NODES = {"busy": 90, "idle": 10}  # % of the CPU each node's /proc/stat shows busy


def machine(root: Path, busy_percent: int) -> tuple[Path, Path]:
    (root / "cg" / "cpu").mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "proc" / "meminfo").write_text("MemTotal: 16777216 kB\nMemAvailable: 12582912 kB\n")
    return root / "cg", root / "proc"


def tick(proc: Path, seconds: int, busy_percent: int) -> None:
    busy = seconds * busy_percent
    (proc / "stat").write_text(f"cpu  {busy} 0 0 {seconds * 100 - busy} 0 0 0 0 0 0\n")


async def test_a_busy_node_reported_by_the_agent_is_filtered_by_load_aware(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = api_client(kubeconfig)
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    for name, busy_percent in NODES.items():
        node = make_node(name, cpu="4", memory="16Gi", capacity={"cpu": "4", "memory": "16Gi"})
        api.apply(node)
        (cluster / f"{name}.yaml").write_text(yaml.safe_dump(node))
        cg, proc = machine(tmp_path / name, busy_percent)
        now = [START]
        store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
        store.replace("Node", [node])
        agent = Agent(
            AgentSettings(name, cg, proc=proc),
            StrategyOptions(koordlet_gates("")),
            store,
            client,
            clock=lambda now=now: now[0],
            processors=flat_processors(4),
        )  # type: ignore[misc]
        agent.collector.cpu_count = lambda: 4
        for second in range(0, 61, 10):  # a minute of collections
            now[0] = START + second
            tick(proc, 1000 + second, busy_percent)
            agent.collect_once()
        assert await asyncio.to_thread(agent.report_once)  # blocking HTTP: off the loop the stand-in serves on
    for name in NODES:
        metric: dict[str, Any] = api.store.get(api.by_kind[NODE_METRIC_KIND], "", name)
        (cluster / f"{name}-metric.yaml").write_text(yaml.safe_dump(metric))
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(make_pod("new", requests={"cpu": "100m"})))
    code = main(
        [
            "scheduler",
            "explain",
            "--cluster",
            str(cluster),
            "--pod",
            str(pod),
            "--now",
            format_time(START + 90),
            "-o",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["selected"] == "idle"
    busy = next(n for n in report["nodes"] if n["name"] == "busy")
    failed = [f for f in busy["filters"] if f.get("code") != "Success" and f.get("plugin") == "LoadAwareScheduling"]
    assert not busy["feasible"] and failed, busy

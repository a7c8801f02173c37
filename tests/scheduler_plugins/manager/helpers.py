"""Running `colocate manager run --kubeconfig` in-process against the API-server stand-in."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from colocate.main import build_parser
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.manager.cli import serve
from scheduler_plugins.manager.reconciler import Round
from scheduler_plugins.manager.service import Schedule
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW, make_metric, make_node, make_pod, pod_metric
from tests.support.cluster import free_port

COLOCATION = {"enable": True, "cpuReclaimThresholdPercent": 60, "memoryReclaimThresholdPercent": 65}


def slo_config(colocation: Any = None) -> dict[str, Any]:
    text = colocation if isinstance(colocation, str) else json.dumps(colocation or COLOCATION)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
        "data": {"colocation-config": text},
    }


def prod_metric(cpu_used: str, memory_used: str = "4Gi") -> dict[str, Any]:
    """node-1's NodeMetric: the prod pod `web` uses `cpu_used`, the system 1 core / 2Gi."""
    return make_metric(
        "node-1",
        cpu="12",
        memory="16Gi",
        system={"cpu": "1", "memory": "2Gi"},
        pods=[pod_metric("web", "shop", cpu=cpu_used, memory=memory_used)],
    )


def cluster(colocation: Any = None) -> list[dict[str, Any]]:
    node = make_node("node-1", cpu="32", memory="128Gi", capacity={"cpu": "32", "memory": "128Gi", "pods": "110"})
    prod = make_pod("web", "shop", qos="LS", node="node-1", phase="Running", requests={"cpu": "8", "memory": "16Gi"})
    return [node, prod, prod_metric("2"), slo_config(colocation)]


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Manager:
    """One `manager run` replica as an asyncio task; its rounds are collected."""

    def __init__(self, kubeconfig: Path, *, leader_elect: bool = False, resync: str = "1h") -> None:
        self.port = free_port()
        self.rounds: list[Round] = []
        argv = [
            "manager",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--leader-elect",
            "true" if leader_elect else "false",
            "--health-addr",
            f"127.0.0.1:{self.port}",
            "--metrics-addr",
            f"127.0.0.1:{self.port}",
            "--resync-period",
            resync,
            "--retry-period",
            "0.2s",
            "--watch-timeout",
            "5",
            "--backoff-max",
            "0.3",
        ]
        self.args = build_parser().parse_args(argv)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> Manager:
        clock = fixed_clock(parse_time(NOW) or 0.0)
        self.task = asyncio.create_task(
            serve(self.args, clock, Schedule(None, 3600.0), (15.0, 0.2), self.rounds.append)
        )
        return self

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def metrics(self) -> str:
        return (await asyncio.to_thread(http_get, self.port, "/metrics"))[1]


def node_status(api: ApiServer) -> dict[str, Any]:
    node: dict[str, Any] = api.store.get(api.by_kind["Node"], "", "node-1")
    return dict(node.get("status") or {})


def metric_value(text: str, name: str) -> float:
    """The value of an unlabelled series in a Prometheus exposition."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exposed")

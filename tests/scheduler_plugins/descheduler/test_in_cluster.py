"""Running as a cluster component: a round every interval, only while holding the Lease; /healthz
and /metrics on the configured address."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from colocate.main import build_parser
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.descheduler.cli import Rounds, kube_rounds
from scheduler_plugins.descheduler.framework.config import load_config
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.registry import in_tree_registry
from scheduler_plugins.descheduler.service import Schedule
from tests.scheduler_plugins.descheduler.test_whole_loop import CONFIG, cluster
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW
from tests.support.wait import wait_for


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def start(kubeconfig: Path, tmp_path: Path, port: int, reports: list[RoundReport]) -> asyncio.Task[None]:
    raw: dict[str, Any] = {
        **CONFIG,
        "deschedulingInterval": "1h",
        "healthzBindAddress": f"127.0.0.1:{port}",
        "metricsBindAddress": f"127.0.0.1:{port}",
        "leaderElection": {"leaderElect": True, "resourceNamespace": "default", "resourceName": "koord-descheduler"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    args = build_parser().parse_args(["descheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(path)])
    config = load_config(path, in_tree_registry())
    return asyncio.create_task(
        kube_rounds(
            args,
            Rounds(
                config,
                in_tree_registry(),
                fixed_clock(parse_time(NOW) or 0.0),
                Schedule(None, config.descheduling_interval),
                False,
                reports.append,
            ),
        )
    )


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_the_leader_runs_rounds_and_serves_health_and_metrics(
    api: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    for obj in cluster():
        api.apply(obj)
    port, reports = free_port(), []
    task = await start(kubeconfig, tmp_path, port, reports)
    try:
        await wait_for(lambda: reports, timeout=20, message="the first round")
        assert len(reports[0].evictions) == 3 and api.evictions
        lease = api.store.get(api.by_kind["Lease"], "default", "koord-descheduler")
        assert lease["spec"]["holderIdentity"].startswith(socket.gethostname())
        assert await asyncio.to_thread(get, port, "/healthz") == (200, "ok")
        status, text = await asyncio.to_thread(get, port, "/metrics")
        assert status == 200
        assert 'colocate_descheduler_rounds_total{result="ok"} 1.0' in text
        assert 'colocate_descheduler_evictions_total{plugin="LowNodeLoad",result="evicted"} 3.0' in text
        assert 'colocate_descheduler_nodes{classification="high"} 2.0' in text
        assert "colocate_descheduler_leader 1.0" in text
        assert "colocate_cluster_state_stale_seconds" in text
    finally:
        await stop(task)


async def test_a_replica_without_the_lease_evicts_nothing(api: ApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    for obj in cluster():
        api.apply(obj)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    api.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "koord-descheduler", "namespace": "default"},
            "spec": {
                "holderIdentity": "the-other-replica",
                "leaseDurationSeconds": 3600,
                "renewTime": now,
                "acquireTime": now,
            },
        }
    )
    port, reports = free_port(), []
    task = await start(kubeconfig, tmp_path, port, reports)
    try:
        await wait_for(
            lambda: asyncio.to_thread(get, port, "/metrics"),
            until=lambda got: "colocate_descheduler_leader 0.0" in got[1],
            ignore=(OSError,),
            timeout=20,
            message="the lease attempt",
        )
        await wait_for(
            lambda: asyncio.to_thread(get, port, "/healthz"),
            until=lambda got: got[0] == 200,
            ignore=(OSError,),
            timeout=20,
            message="the state to be listed",
        )
        assert reports == [] and api.evictions == []
    finally:
        await stop(task)

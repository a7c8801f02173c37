"""`colocate scheduler extender --kubeconfig`: cluster state watched from the API-server stand-in.

The extender runs as a real child process against the HTTPS stand-in; every object reaches it
through list/watch, and bind goes back to the stand-in as a `pods/binding` POST.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.apiserver import ApiServer
from tests.support.builders import NOW, make_metric, make_node, make_pod, make_quota, make_reservation
from tests.support.cluster import free_port
from tests.support.paths import REPO
from tests.support.wait import wait_for

CONFIG = REPO / "manifests" / "scheduler" / "scheduler-config.yaml"
LS_POD = make_pod("web", "shop", qos="LS", requests={"cpu": "4", "memory": "8Gi"})
NODES = ["busy", "quiet", "small"]
TIMEOUT = 20.0


def starting_objects() -> list[dict[str, Any]]:
    return [
        make_node("busy", cpu="32", memory="128Gi"),
        make_node("quiet", cpu="32", memory="128Gi"),
        make_node("small", cpu="2", memory="4Gi"),
        make_metric("busy", cpu="30", memory="10Gi"),
        make_metric("quiet", cpu="2", memory="10Gi"),
        make_metric("small", cpu="0", memory="0"),
    ]


class Extender:
    """`colocate scheduler extender --kubeconfig` as a child process, and an HTTP client for it."""

    def __init__(self, kubeconfig: Path, log: Path, session: aiohttp.ClientSession) -> None:
        self.port, self.log, self.session = free_port(), log, session
        command = [
            sys.executable,
            "-m",
            "colocate.main",
            "scheduler",
            "extender",
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(CONFIG),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--now",
            NOW,
            "--watch-timeout",
            "5",
            "--backoff-max",
            "0.3",
        ]
        self.process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=REPO)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/scheduler/{path}"

    async def status(self, path: str) -> int:
        try:
            async with self.session.get(self.url(path), timeout=aiohttp.ClientTimeout(total=1)) as response:
                return response.status
        except (TimeoutError, aiohttp.ClientError):
            return 0

    async def post(self, verb: str, body: dict[str, Any], status: int = 200) -> Any:
        async with self.session.post(self.url(verb), json=body, timeout=aiohttp.ClientTimeout(total=10)) as response:
            assert response.status == status, await response.text()
            return await response.json()

    async def filter(self, pod: dict[str, Any] = LS_POD, nodes: list[str] = NODES) -> dict[str, Any]:
        return await self.post("filter", {"Pod": pod, "NodeNames": nodes})

    async def wait_ready(self) -> Extender:
        async def ready() -> bool:
            assert self.process.poll() is None, self.log.read_text()
            return await self.status("readyz") == 200

        await wait_for(ready, timeout=TIMEOUT, message=lambda: f"extender ready; log:\n{self.log.read_text()}")
        return self

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer(bookmark_interval=0.2) as server:
        for obj in starting_objects():
            server.apply(obj)
        yield server


@pytest.fixture
async def start(api: ApiServer, tmp_path: Path) -> AsyncIterator[Callable[[], Extender]]:
    """`start()` launches an extender against the stand-in (not yet waited for)."""
    extenders: list[Extender] = []
    async with aiohttp.ClientSession() as session:

        def launch() -> Extender:
            kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
            extenders.append(Extender(kubeconfig, tmp_path / f"extender-{len(extenders)}.log", session))
            return extenders[-1]

        yield launch
        for extender in extenders:
            extender.stop()


@pytest.fixture
async def extender(start: Callable[[], Extender]) -> Extender:
    return await start().wait_ready()


async def test_not_ready_and_refusing_verbs_until_every_kind_is_listed(api: ApiServer, start) -> None:
    api.fail_requests(10_000)
    ext = start()
    await wait_for(lambda: _is(ext.status("healthz"), 200), timeout=TIMEOUT, message="extender listening")
    assert await ext.status("readyz") == 503
    refused = await ext.post("filter", {"Pod": LS_POD, "NodeNames": NODES}, status=503)
    assert "not synced" in refused["Error"]
    api.fail_requests(0)
    await ext.wait_ready()
    assert (await ext.filter())["NodeNames"] == ["quiet"]


async def test_the_synced_log_line_counts_the_bound_pods_as_docs_scheduler_md_shows(api: ApiServer, start) -> None:
    api.apply(make_pod("bound", "shop", requests={"cpu": "1"}, node="busy"))
    api.apply(make_pod("pending", "shop", requests={"cpu": "1"}))  # not watched: not counted
    ext = await start().wait_ready()
    line = "cluster state synced from the API server: 3 nodes, 3 NodeMetrics, 1 bound pods"
    await wait_for(lambda: line in ext.log.read_text(), timeout=TIMEOUT, message=lambda: ext.log.read_text())


async def test_metrics_export_the_store_health_as_the_webhook_does(api: ApiServer, extender: Extender) -> None:
    async def page() -> str:
        async with extender.session.get(extender.url("metrics")) as response:
            assert response.status == 200
            return await response.text()

    await wait_for(
        page,
        until=lambda text: 'colocate_cluster_state_stale_seconds{kind="Node"} 0.0' in text,
        timeout=TIMEOUT,
        message="staleness exported",
    )
    api.fail_requests(10_000, status=503)
    api.drop_watches()
    await wait_for(
        page,
        until=lambda text: 'colocate_watch_failures_total{kind="Node",reason="error"}' in text,
        timeout=TIMEOUT,
        message="watch failures counted",
    )
    api.fail_requests(0)


async def test_filter_and_prioritize_judge_the_nodes_and_metrics_listed_from_the_api(extender: Extender) -> None:
    result = await extender.filter(nodes=[*NODES, "ghost"])
    assert result["NodeNames"] == ["quiet"]
    assert set(result["FailedNodes"]) == {"busy", "small"}
    assert "usage exceed threshold" in result["FailedNodes"]["busy"]
    assert result["FailedAndUnresolvableNodes"] == {"ghost": "node not found in the extender's cache"}
    scores = {h["Host"]: h["Score"] for h in await extender.post("prioritize", {"Pod": LS_POD, "NodeNames": NODES})}
    assert scores["quiet"] > scores["busy"]


async def test_nodes_added_and_deleted_later_are_reflected(api: ApiServer, extender: Extender) -> None:
    api.apply(make_node("fresh", cpu="32", memory="128Gi"))
    api.apply(make_metric("fresh", cpu="1", memory="1Gi"))
    await wait_for(lambda: _passes(extender, "fresh"), timeout=TIMEOUT, message="new node usable")
    api.delete("Node", "quiet")
    await wait_for(lambda: _unknown(extender, "quiet"), timeout=TIMEOUT, message="deleted node gone")


async def test_a_node_metric_updated_later_changes_the_verdict(api: ApiServer, extender: Extender) -> None:
    assert "busy" in (await extender.filter())["FailedNodes"]
    api.apply(make_metric("busy", cpu="1", memory="10Gi"))
    await wait_for(lambda: _passes(extender, "busy"), timeout=TIMEOUT, message="busy node relieved")


async def test_bound_pods_count_until_they_terminate(api: ApiServer, extender: Extender) -> None:
    hog = make_pod("hog", "shop", requests={"cpu": "30", "memory": "8Gi"}, node="quiet")
    api.apply(make_pod("waiting", "shop", requests={"cpu": "30"}))  # pending: not the extender's business
    api.apply(hog)
    await wait_for(lambda: _fails(extender, "quiet"), timeout=TIMEOUT, message="bound pod counted")
    api.apply({**hog, "status": {"phase": "Succeeded"}})
    await wait_for(lambda: _passes(extender, "quiet"), timeout=TIMEOUT, message="terminated pod released")


async def test_a_dropped_watch_is_resumed_and_a_compacted_one_relisted(api: ApiServer, extender: Extender) -> None:
    api.drop_watches()
    api.apply(make_metric("busy", cpu="1", memory="10Gi"))
    await wait_for(lambda: _passes(extender, "busy"), timeout=TIMEOUT, message="change made while the watch was down")
    before = api.requests["GET list Node"]
    api.drop_watches()
    api.delete("Node", "quiet")
    api.store.compact()
    await wait_for(
        lambda: _unknown(extender, "quiet"), timeout=TIMEOUT, message="deletion seen by a relist after 410 Gone"
    )
    assert api.requests["GET list Node"] > before


async def test_bind_posts_a_binding_and_the_pod_counts_at_once(api: ApiServer, extender: Extender) -> None:
    big = make_pod("big", "shop", qos="LS", requests={"cpu": "20", "memory": "8Gi"})
    big = api.apply(big)  # kube-scheduler sends the pod as the API server stored it, UID included
    uid = big["metadata"]["uid"]
    assert (await extender.filter(big, ["quiet"]))["NodeNames"] == ["quiet"]
    args = {"PodName": "big", "PodNamespace": "shop", "PodUID": uid, "Node": "quiet"}
    assert await extender.post("bind", args) == {"Error": ""}
    stored = api.store.get(api.by_kind["Pod"], "shop", "big")
    assert stored["spec"]["nodeName"] == "quiet"
    assert api.requests["POST binding Pod"] == 1
    second = make_pod("second", "shop", qos="LS", requests={"cpu": "20", "memory": "8Gi"})
    assert "quiet" in (await extender.filter(second, ["quiet"]))["FailedNodes"]
    again = await extender.post("bind", args)
    assert "already assigned" in again["Error"]
    api.delete("Pod", "big", "shop")
    await wait_for(
        lambda: _passes_pod(extender, second, "quiet"), timeout=TIMEOUT, message="deleted pod no longer counted"
    )


async def test_elastic_quota_follows_the_quotas_and_pods_watched_from_the_api(
    api: ApiServer, extender: Extender
) -> None:
    labels = {"quota.scheduling.koordinator.sh/name": "team"}
    asking = make_pod("asking", "shop", qos="LS", labels=labels, requests={"cpu": "6", "memory": "1Gi"})
    running = make_pod("running", "shop", labels=labels, requests={"cpu": "6", "memory": "1Gi"}, node="busy")
    api.apply(make_quota("team", "shop", min={"cpu": "0"}, max={"cpu": "10"}))
    api.apply(running)

    async def refused() -> bool:
        status = (await extender.filter(asking, ["quiet"]))["FailedNodes"].get("quiet", "")
        return "Insufficient quotas, quotaName: team, runtime: cpu=10, used: cpu=6" in status

    await wait_for(refused, timeout=TIMEOUT, message="quota and its running pod seen")
    api.apply({**running, "status": {"phase": "Succeeded"}})
    await wait_for(lambda: _passes_pod(extender, asking, "quiet"), timeout=TIMEOUT, message="finished pod freed quota")


async def _is(status: Awaitable[int], expected: int) -> bool:
    return await status == expected


async def _passes(extender: Extender, node: str) -> bool:
    return await _passes_pod(extender, LS_POD, node)


async def _passes_pod(extender: Extender, pod: dict[str, Any], node: str) -> bool:
    return (await extender.filter(pod, [node]))["NodeNames"] == [node]


async def _fails(extender: Extender, node: str) -> bool:
    return node in (await extender.filter(nodes=[node]))["FailedNodes"]


async def _unknown(extender: Extender, node: str) -> bool:
    return node in (await extender.filter(nodes=[node]))["FailedAndUnresolvableNodes"]


async def test_an_owner_bound_through_the_extender_consumes_its_reservation_in_the_api(
    api: ApiServer, extender: Extender
) -> None:
    reservation = make_reservation("r-web")
    reservation["spec"]["owners"] = [{"object": {"name": "owned", "namespace": "shop"}}]
    reservation["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "20"}
    reservation["status"] = {"phase": "Available", "nodeName": "quiet"}
    api.apply(reservation)
    owned = make_pod("owned", "shop", qos="LS", requests={"cpu": "4", "memory": "1Gi"})
    stranger = make_pod("stranger", "shop", qos="LS", requests={"cpu": "14", "memory": "1Gi"})  # 12 free
    await wait_for(
        lambda: _fails_pod(extender, stranger, "quiet"),
        timeout=TIMEOUT,
        message="the reservation holds its cpu on quiet",
    )
    owned = api.apply(owned)  # as the API server stored it, UID included
    uid = owned["metadata"]["uid"]
    assert (await extender.filter(owned, ["quiet"]))["NodeNames"] == ["quiet"]
    args = {"PodName": "owned", "PodNamespace": "shop", "PodUID": uid, "Node": "quiet"}
    assert await extender.post("bind", args) == {"Error": ""}
    stored = api.store.get(api.by_kind["Pod"], "shop", "owned")
    assert (
        json.loads(stored["metadata"]["annotations"]["scheduling.koordinator.sh/reservation-allocated"])["name"]
        == "r-web"
    )
    status = api.store.get(api.by_kind["Reservation"], "", "r-web")["status"]
    assert status["currentOwners"][0]["name"] == "owned" and status["allocated"]["cpu"] == "4000m"


async def _fails_pod(extender: Extender, pod: dict[str, Any], node: str) -> bool:
    return node in (await extender.filter(pod, [node]))["FailedNodes"]

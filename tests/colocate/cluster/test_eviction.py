"""Evictions through `policy/v1` against the stand-in: disruption budgets are honoured by the API
server, and a 429 is a skip with its reason, never an error; Events are best effort."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.events import EventRecorder
from colocate.cluster.eviction import EvictionClient, EvictionResult, Outcome
from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod


def ready(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def budget(min_available: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
    }


async def evict(kubeconfig: Path, name: str) -> Any:
    client = EvictionClient(api_client(kubeconfig))
    return await asyncio.get_running_loop().run_in_executor(None, client.evict, "ns", name)


async def test_a_pod_is_evicted_until_its_budget_allows_no_more(api: ApiServer, kubeconfig: Path) -> None:
    for name in ("web-1", "web-2", "web-3"):
        api.apply(ready(make_pod(name, "ns", labels={"app": "web"})))
    api.apply(budget(2))
    first = await evict(kubeconfig, "web-1")
    assert first.outcome is Outcome.EVICTED
    second = await evict(kubeconfig, "web-2")
    assert second.outcome is Outcome.BLOCKED and second.code == 429
    assert "disruption budget" in second.message
    assert api.evictions == [("ns", "web-1")]


async def test_a_percentage_budget_and_an_unbudgeted_pod(api: ApiServer, kubeconfig: Path) -> None:
    for name in ("web-1", "web-2"):
        api.apply(ready(make_pod(name, "ns", labels={"app": "web"})))
    api.apply(ready(make_pod("batch", "ns", labels={"app": "batch"})))
    api.apply(budget("50%"))
    assert (await evict(kubeconfig, "web-1")).outcome is Outcome.EVICTED
    assert (await evict(kubeconfig, "web-2")).outcome is Outcome.BLOCKED
    assert (await evict(kubeconfig, "batch")).outcome is Outcome.EVICTED


async def test_a_missing_pod_is_gone_and_a_server_error_is_a_failure(api: ApiServer, kubeconfig: Path) -> None:
    assert (await evict(kubeconfig, "nobody")).outcome is Outcome.GONE
    api.apply(ready(make_pod("p", "ns")))
    api.fail_requests(1, status=500)
    failed = await evict(kubeconfig, "p")
    assert failed.outcome is Outcome.FAILED and failed.code == 500


async def test_an_event_is_recorded_about_the_pod_and_a_failure_to_record_is_swallowed(
    api: ApiServer, kubeconfig: Path
) -> None:
    pod = make_pod("p", "ns")
    recorder = EventRecorder(api_client(kubeconfig), "colocate-descheduler", host="node-1")
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, recorder.record, pod, "Normal", "Evicted", "evicted by LowNodeLoad")
    (event,) = api.store.list(api.by_kind["Event"], "ns")
    assert event["involvedObject"]["name"] == "p" and event["reason"] == "Evicted"
    assert event["source"] == {"component": "colocate-descheduler", "host": "node-1"}
    api.fail_requests(1, status=500)
    await loop.run_in_executor(None, recorder.record, pod, "Warning", "Evicted", "again")  # no exception


async def test_a_server_without_policy_v1_gets_a_v1beta1_eviction_found_by_discovery(tmp_path: Path) -> None:
    """Kubernetes 1.20 serves pods/eviction as policy/v1beta1 and answers a policy/v1 Eviction with 400:
    the version comes from discovery (Koordinator's SupportEviction), asked once per client."""
    async with ApiServer(eviction_version="v1beta1") as old:
        for name in ("a", "b"):
            old.apply(ready(make_pod(name, "ns")))
        client = EvictionClient(api_client(old.write_kubeconfig(tmp_path / "kubeconfig")))
        loop = asyncio.get_running_loop()
        results = [await loop.run_in_executor(None, client.evict, "ns", name) for name in ("a", "b")]
        assert [r.outcome for r in results] == [Outcome.EVICTED, Outcome.EVICTED]
        assert old.evictions == [("ns", "a"), ("ns", "b")]
        assert old.requests["GET /api/v1"] == 1


@pytest.mark.parametrize(
    ("result", "permanent"),
    [
        (EvictionResult(Outcome.FAILED, "the API version in the data (policy/v1) does not match", 400), True),
        (EvictionResult(Outcome.FAILED, "forbidden", 403), True),
        (EvictionResult(Outcome.BLOCKED, "disruption budget", 429), False),
        (EvictionResult(Outcome.FAILED, "injected failure", 500), False),
        (EvictionResult(Outcome.FAILED, "connection refused", 0), False),
    ],
)
def test_only_a_request_the_server_refused_as_such_is_a_permanent_failure(
    result: EvictionResult, permanent: bool
) -> None:
    assert result.permanent is permanent

"""The extender over HTTP: upstream wire shapes in and out, malformed bodies answered, not crashed."""

import json

import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from scheduler_plugins.scheduler.extender.server import VERBS, make_app
from scheduler_plugins.scheduler.extender.service import ExtenderService
from tests.support.builders import make_metric, make_node, make_pod
from tests.support.paths import REPO
from tests.support.scheduling import make_framework

LS_POD = make_pod("web", "shop", qos="LS", requests={"cpu": "4", "memory": "8Gi"})


def cluster_objects():
    return [
        make_node("busy", cpu="32", memory="128Gi"),
        make_node("quiet", cpu="32", memory="128Gi"),
        make_node("small", cpu="2", memory="4Gi"),
        make_metric("busy", cpu="30", memory="10Gi"),
        make_metric("quiet", cpu="2", memory="10Gi"),
    ]


@pytest.fixture
async def client():
    fwk, cluster = make_framework(cluster_objects())
    async with TestClient(TestServer(make_app(ExtenderService(fwk, cluster)))) as c:
        c.cluster = cluster
        yield c


async def post(client, verb, body, status=200):
    resp = await client.post(f"/scheduler/{verb}", data=body if isinstance(body, (str, bytes)) else json.dumps(body))
    assert resp.status == status, await resp.text()
    return await resp.json()


async def test_filter_with_node_names_reports_survivors_and_reasons(client):
    result = await post(client, "filter", {"Pod": LS_POD, "NodeNames": ["busy", "quiet", "small", "ghost"]})
    assert result == {
        "Nodes": None,
        "NodeNames": ["quiet"],
        "FailedNodes": {"busy": "node(s) cpu usage exceed threshold", "small": "Insufficient cpu, Insufficient memory"},
        "FailedAndUnresolvableNodes": {"ghost": "node not found in the extender's cache"},
        "Error": "",
    }


async def test_filter_without_node_cache_echoes_node_objects_and_accepts_any_key_casing(client):
    nodes = [make_node("quiet", cpu="32", memory="128Gi"), make_node("busy", cpu="32", memory="128Gi")]
    result = await post(client, "filter", {"pod": LS_POD, "nodes": {"items": nodes}})
    assert result["NodeNames"] is None
    assert result["Nodes"] == {"items": [nodes[0]]}
    assert list(result["FailedNodes"]) == ["busy"]


async def test_prioritize_scales_to_zero_ten(client):
    result = await post(client, "prioritize", {"Pod": LS_POD, "NodeNames": ["busy", "quiet"]})
    assert [h["Host"] for h in result] == ["busy", "quiet"]
    scores = {h["Host"]: h["Score"] for h in result}
    assert all(0 <= s <= 10 for s in scores.values())
    assert scores["quiet"] > scores["busy"]


@pytest.mark.parametrize(
    "verb, body, status",
    [
        ("filter", "{not json", 400),
        ("filter", {"Pod": "nope", "NodeNames": ["quiet"]}, 400),
        ("filter", {"Pod": LS_POD}, 400),
        ("filter", {"Pod": LS_POD, "NodeNames": "quiet"}, 400),
        ("prioritize", {"Pod": LS_POD, "Nodes": {"items": [{"metadata": {}}]}}, 400),
        ("bind", {"PodName": 3}, 400),
        ("bind", [], 400),
    ],
)
async def test_malformed_args_get_an_error_in_the_response(client, verb, body, status):
    result = await post(client, verb, body, status)
    assert result["Error"]
    assert (await client.get("/scheduler/healthz")).status == 200  # still serving


def _malformed(kind: str) -> dict:
    pod = make_pod("odd", "shop", qos="LS", requests={"cpu": "1"})
    if kind == "containers":
        pod["spec"]["containers"] = "x"
    elif kind == "labels":
        pod["metadata"]["labels"] = [1]
    else:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 1e308
    return pod


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
@pytest.mark.parametrize(
    "kind, field",
    [
        ("containers", "spec.containers: must be a list"),
        ("labels", "metadata.labels: must be an object"),
        ("cpu", "spec.containers[0].resources.requests.cpu: quantity exponents must be within"),
    ],
)
async def test_a_pod_the_api_server_could_not_send_is_a_400_naming_the_field(client, verb, kind, field):
    """Before: 500 with a traceback in the log."""
    result = await post(client, verb, {"Pod": _malformed(kind), "NodeNames": ["quiet"]}, 400)
    assert result["Error"].startswith(f"ExtenderArgs.Pod.{field}")


async def test_a_bind_whose_pod_uid_is_not_the_pods_is_refused(client):
    pod = make_pod("uid", "shop", qos="LS", requests={"cpu": "1"})
    pod["metadata"]["uid"] = "2f7e1c8a-0000-4000-8000-000000000001"
    assert (await post(client, "filter", {"Pod": pod, "NodeNames": ["quiet"]}))["NodeNames"] == ["quiet"]
    other = {
        "PodName": "uid",
        "PodNamespace": "shop",
        "PodUID": "2f7e1c8a-0000-4000-8000-000000000002",
        "Node": "quiet",
    }
    assert "is not the UID of pod shop/uid" in (await post(client, "bind", other))["Error"]
    assert "shop/uid" not in client.cluster.nodes["quiet"].pods
    right = {**other, "PodUID": pod["metadata"]["uid"]}
    assert await post(client, "bind", right) == {"Error": ""}
    assert "shop/uid" in client.cluster.nodes["quiet"].pods


async def test_bind_places_the_pod_and_later_filters_see_it(client):
    big = make_pod("big", "shop", qos="LS", requests={"cpu": "20", "memory": "8Gi"})
    assert (await post(client, "filter", {"Pod": big, "NodeNames": ["quiet"]}))["NodeNames"] == ["quiet"]
    assert await post(client, "bind", {"PodName": "big", "PodNamespace": "shop", "PodUID": "", "Node": "quiet"}) == {
        "Error": ""
    }
    assert "shop/big" in client.cluster.nodes["quiet"].pods
    other = make_pod("other", "shop", qos="LS", requests={"cpu": "20", "memory": "8Gi"})
    result = await post(client, "filter", {"Pod": other, "NodeNames": ["quiet"]})
    assert result["FailedNodes"] == {"quiet": "Insufficient cpu"}


async def test_bind_of_an_unknown_pod_is_an_error(client):
    result = await post(client, "bind", {"PodName": "x", "PodNamespace": "y", "PodUID": "", "Node": "quiet"})
    assert "unknown" in result["Error"]


def test_kube_scheduler_manifest_uses_the_verbs_the_server_serves():
    path = REPO / "manifests" / "scheduler" / "kube-scheduler-extender-config.yaml"
    doc = yaml.safe_load(path.read_text())
    (ext,) = doc["extenders"]
    assert ext["urlPrefix"].endswith("/scheduler")
    assert {ext["filterVerb"], ext["prioritizeVerb"], ext["preemptVerb"], ext["bindVerb"]} == set(VERBS)
    assert ext["nodeCacheCapable"] is True


async def test_metrics_count_every_verb_by_status_so_an_alert_can_see_errors(client):
    await post(client, "filter", {"Pod": LS_POD, "NodeNames": ["quiet"]})
    await post(client, "filter", "not json", status=400)
    page = await (await client.get("/scheduler/metrics")).text()
    assert 'colocate_extender_requests_total{code="200",verb="filter"} 1.0' in page
    assert 'colocate_extender_requests_total{code="400",verb="filter"} 1.0' in page

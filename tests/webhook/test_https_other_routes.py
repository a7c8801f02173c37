"""Every new path over real HTTPS: a server on 127.0.0.1 with generated certs, verified with the CA.

Each round trip goes the way the conformance bar drives it: POST the mutating webhook, apply the
returned JSONPatch, POST the validating webhook. Also checks that each plugin's duration lands in
the per-plugin histogram.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
import pytest

from certs.generate import ensure_serving_certs
from colocate.cluster.files import read_manifest_file
from policies.admission.snapshot import ClusterSnapshot
from tests.support.admission import QUOTA_MUTATE, QUOTA_VALIDATE, ROUTES
from tests.support.builders import make_node, make_quota, make_reservation, make_slo_config
from tests.support.listener import listening
from webhook.metrics import WebhookMetrics
from webhook.port import build_server
from webhook.registry import default_routes
from webhook.serve import tls_context
from webhook.state import StateHolder

FIXTURES = Path(__file__).parent / "fixtures"


class Client:
    def __init__(self, session: aiohttp.ClientSession, base: str, metrics: WebhookMetrics) -> None:
        self.session, self.base, self.metrics = session, base, metrics

    async def review(
        self, path: str, obj: dict | None, operation: str = "CREATE", old: dict | None = None, uid: str = "uid-1"
    ) -> dict[str, Any]:
        route = ROUTES[path]
        request = {
            "uid": uid,
            "operation": operation,
            "kind": {"kind": route.kind},
            "resource": {"group": route.api_group, "version": route.api_version, "resource": route.resource},
            "object": obj,
            "oldObject": old,
        }
        if route.sub_resource:
            request["subResource"] = route.sub_resource
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        async with self.session.post(self.base + path, json=body) as response:
            assert response.status == 200
            review = await response.json()
        assert review["response"]["uid"] == uid
        return review["response"]

    async def chain(
        self, mutate: str, validate: str, obj: dict, operation: str = "CREATE", old: dict | None = None
    ) -> tuple[dict, dict]:
        """Mutate, apply the patch, validate; returns (validating response, object after the patch)."""
        mutated = await self.review(mutate, obj, operation, old)
        assert mutated["allowed"], mutated
        if "patch" in mutated:
            assert mutated["patchType"] == "JSONPatch"
            obj = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(mutated["patch"])))
        return await self.review(validate, obj, operation, old), obj


@pytest.fixture
async def client(tmp_path) -> AsyncIterator[Client]:
    objects = [
        obj
        for name in ("quota-tree.yaml", "slo-config.yaml", "reservation-profiles.yaml")
        for obj in read_manifest_file(FIXTURES / name)
    ]
    state = StateHolder()
    state.publish(ClusterSnapshot.from_objects(("fixture", obj) for obj in objects))
    metrics = WebhookMetrics()
    paths, _ = ensure_serving_certs(tmp_path / "certs")
    trust = ssl.create_default_context(cafile=str(paths.ca))
    async with listening(build_server(default_routes(), state, metrics), tls_context(paths)) as base:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as session:
            yield Client(session, base, metrics)


def plugin_observations(metrics: WebhookMetrics, object_type: str, plugin: str) -> float:
    metrics.flush()  # what a scrape does first
    value = metrics.registry.get_sample_value(
        "koord_manager_webhook_webhook_duration_milliseconds_count",
        {
            "object_type": object_type,
            "plugin_name": plugin,
            "webhook_type": "mutate"
            if plugin in ("NodeResourceAmplificationPlugin", "ClusterReservation", "QuotaDefaults")
            else "validate",
            "operation": "UPDATE" if object_type == "node" else "CREATE",
            "status": "allowed",
        },
    )
    return value or 0


async def test_node_status_amplification_then_node_validation(client: Client):
    old = make_node("node-a", labels={"pool": "a"}, allocatable={"cpu": "4"})
    new = make_node(
        "node-a",
        labels={"pool": "a"},
        annotations={"node.koordinator.sh/resource-amplification-ratio": '{"cpu": 2}'},
        allocatable={"cpu": "4"},
    )
    response, node = await client.chain("/mutate-node-status", "/validate-node", new, "UPDATE", old)
    assert response["allowed"]
    assert node["status"]["allocatable"]["cpu"] == "8"
    assert plugin_observations(client.metrics, "node", "NodeResourceAmplificationPlugin") == 1
    assert plugin_observations(client.metrics, "node", "SLOManagerConfigConflictForNode") == 1


async def test_node_label_conflict_is_refused_over_https(client: Client):
    old = make_node("node-a", labels={"pool": "a"})
    new = make_node("node-a", labels={"pool": "a", "zone": "z1"})
    response = await client.review("/validate-node", new, "UPDATE", old)
    assert response["allowed"] is False and response["status"]["code"] == 400
    assert '"reason":"ExistNodeConfict"' in response["status"]["message"]


async def test_node_status_route_ignores_plain_node_requests(client: Client):
    route = ROUTES["/mutate-node-status"]
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "operation": "UPDATE",
            "resource": {"group": "", "version": "v1", "resource": route.resource},
            "object": make_node(
                annotations={"node.koordinator.sh/resource-amplification-ratio": '{"cpu": 2}'}, allocatable={"cpu": "4"}
            ),
            "oldObject": make_node(allocatable={"cpu": "4"}),
        },
    }
    async with client.session.post(client.base + "/mutate-node-status", json=body) as response:
        answer = (await response.json())["response"]
    assert answer == {"uid": "u", "allowed": True}


async def test_reservation_round_trip(client: Client):
    response, reservation = await client.chain(
        "/mutate-reservation", "/validate-reservation", make_reservation(labels={"app": "batch"})
    )
    assert response["allowed"]
    assert reservation["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
    assert reservation["spec"]["template"]["spec"]["priority"] == 5000


async def test_quota_round_trip_admits_a_fitting_child_with_its_inherited_tree_id(client: Client):
    quota = make_quota("new", parent="parent", min={"cpu": "1", "memory": "1Gi"}, max={"cpu": "20", "memory": "20Gi"})
    response, defaulted = await client.chain(QUOTA_MUTATE, QUOTA_VALIDATE, quota)
    assert response["allowed"], response
    assert defaulted["metadata"]["labels"]["quota.scheduling.koordinator.sh/tree-id"] == "tree-1"


async def test_quota_round_trip_refuses_a_child_over_its_parents_min(client: Client):
    quota = make_quota("new", parent="parent", min={"cpu": "5", "memory": "1Gi"}, max={"cpu": "20", "memory": "20Gi"})
    response, _ = await client.chain(QUOTA_MUTATE, QUOTA_VALIDATE, quota)
    assert response["status"] == {
        "code": 400,
        "message": "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: parent",
    }


async def test_quota_delete_with_children_is_refused(client: Client):
    stored = next(q for q in read_manifest_file(FIXTURES / "quota-tree.yaml") if q["metadata"]["name"] == "parent")
    response = await client.review(QUOTA_VALIDATE, None, "DELETE", stored)
    assert response["status"]["message"] == "delete quota failed, quota parent has 2 child quotas"


async def test_configmap_round_trip(client: Client):
    good = make_slo_config({"system-config": {"clusterStrategy": {"minFreeKbytesFactor": 100}}})
    assert (await client.review("/validate-configmap", good))["allowed"]
    bad = make_slo_config({"colocation-config": "{not json"})
    response = await client.review("/validate-configmap", bad)
    assert response["allowed"] is False and response["status"]["code"] == 400
    assert response["status"]["message"].startswith('___{"reason":"ParseConfigFail"')

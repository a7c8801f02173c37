"""An ElasticQuota tree applied in one go: a child arrives ~20 ms after its parent, before the
webhook's watch has shown the parent. Refused before with `not find parentInfo in quotaInfoMap`;
now the quota webhook reads the parent the request names from the API server once, and judges
against it (docs/webhook.md, "A quota tree applied in one go")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from colocate.cluster.client import api_client
from colocate.cluster.lookup import ObjectLookup
from policies.admission.snapshot import ClusterSnapshot
from tests.support.admission import QUOTA_VALIDATE, admission_review
from tests.support.apiserver import ApiServer
from tests.support.builders import make_quota
from webhook.live_reads import LiveReads
from webhook.metrics import WebhookMetrics
from webhook.registry import default_routes
from webhook.server import AdmissionEndpoint
from webhook.state import StateHolder

NOT_FOUND = "child has parentName team but not find parentInfo in quotaInfoMap"
PARENT = make_quota("team", is_parent=True, tree_id="t", min={"cpu": "4"}, max={"cpu": "8"})
CHILD = make_quota("child", parent="team", tree_id="t", min={"cpu": "1"}, max={"cpu": "8"})


class Webhook:
    """The quota validation endpoint over a snapshot that does not hold the parent yet."""

    def __init__(self, kubeconfig: Path) -> None:
        self.state = StateHolder()
        self.state.publish(ClusterSnapshot())  # listed before the parent was created
        self.reads = Counter("reads", "reads", ["result"], registry=CollectorRegistry())
        self.state.live_reads = LiveReads(ObjectLookup(api_client(kubeconfig)), self.reads)
        route = default_routes().by_path()[QUOTA_VALIDATE]
        self.endpoint = AdmissionEndpoint(route, self.state, WebhookMetrics(), 1 << 20, lambda n: 0)

    async def create(self, quota: dict[str, Any]) -> dict[str, Any]:
        review = admission_review(quota, kind="ElasticQuota", resource="elasticquotas")
        assert self.endpoint.reads_live
        served = await self.endpoint.serve_reading(json.dumps(review).encode())
        response: dict[str, Any] = json.loads(served.body)["response"]
        return response

    def count(self, result: str) -> float:
        return self.reads.labels(result)._value.get()


@pytest.fixture
def webhook(kubeconfig: Path) -> Webhook:
    return Webhook(kubeconfig)


async def test_a_child_whose_parent_the_watch_has_not_shown_is_judged_against_the_parent_read(
    api: ApiServer, webhook: Webhook
) -> None:
    api.apply(PARENT)
    reads_before = api.requests["GET list ElasticQuota"]
    response = await webhook.create(CHILD)
    assert response["allowed"], response
    assert api.requests["GET list ElasticQuota"] - reads_before == 1  # one read for the request
    assert webhook.count("found") == 1


async def test_a_child_of_a_parent_that_does_not_exist_is_still_refused(api: ApiServer, webhook: Webhook) -> None:
    response = await webhook.create(CHILD)
    assert not response["allowed"] and response["status"]["message"] == NOT_FOUND
    assert webhook.count("missing") == 1


async def test_a_read_that_fails_refuses_as_before_and_is_counted(api: ApiServer, webhook: Webhook) -> None:
    api.apply(PARENT)
    api.fail_requests(1, status=500)
    response = await webhook.create(CHILD)
    assert not response["allowed"] and response["status"]["message"] == NOT_FOUND
    assert webhook.count("error") == 1


async def test_a_child_whose_parent_is_in_the_snapshot_costs_no_read(api: ApiServer, webhook: Webhook) -> None:
    webhook.state.publish(ClusterSnapshot.from_objects([("", PARENT)]))
    response = await webhook.create(CHILD)
    assert response["allowed"]
    assert api.requests["GET list ElasticQuota"] == 0

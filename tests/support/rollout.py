"""Profiles, pods and clusters of the rollout tests (audit, reports): two teams' profiles and pods
admitted by them, as they run."""

from __future__ import annotations

from typing import Any

from policies.admission.snapshot import ClusterSnapshot
from tests.support.admission import make_snapshot
from tests.support.builders import make_container, make_namespace, make_pod, make_profile
from webhook.chain import request_for, run_chain
from webhook.registry import default_routes

REGISTRY = default_routes()
BATCH = make_profile(
    "batch",
    selector={"matchLabels": {"tier": "batch"}},
    qosClass="BE",
    priorityClassName="koord-batch",
    labels={"team": "data"},
)
WEB = make_profile("web", selector={"matchLabels": {"tier": "web"}}, qosClass="LS", priorityClassName="koord-prod")
NAMESPACES = [make_namespace("default"), make_namespace("analytics")]


def admitted(pod: dict[str, Any], snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The pod as the chain admits it, running (the API server and kubelet add status)."""
    result = run_chain(request_for(pod, REGISTRY), REGISTRY, snapshot, rand_int=lambda n: 0)
    assert result.allowed, result.message
    assert result.object is not None
    return {**result.object, "status": {"phase": "Running"}}


def cluster(profile_list: list[dict[str, Any]], pod_list: list[dict[str, Any]]) -> ClusterSnapshot:
    return make_snapshot(*profile_list, *NAMESPACES, *pod_list)


def batch_pod(name: str, namespace: str = "analytics") -> dict[str, Any]:
    return make_pod(
        name, namespace, labels={"tier": "batch"}, containers=[make_container(requests={"cpu": "1", "memory": "1Gi"})]
    )


def web_pod(name: str) -> dict[str, Any]:
    return make_pod(
        name,
        "default",
        labels={"tier": "web"},
        containers=[make_container(requests={"cpu": "2", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"})],
    )

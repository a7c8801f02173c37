"""Tiny builders for the node, reservation, quota and ConfigMap tests, and a one-route admit helper."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from policies.admission import AdmissionRequest, GroupVersionResource
from policies.snapshot import ClusterSnapshot
from webhook.admission import Outcome, run_route
from webhook.registry import default_routes
from cluster.files import read_manifest_file

FIXTURES = Path(__file__).parent / "fixtures"
ROUTES = default_routes().by_path()
QUOTA_MUTATE = "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"
QUOTA_VALIDATE = "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"


def fixture(name: str) -> list[dict[str, Any]]:
    return read_manifest_file(FIXTURES / name)


def snapshot(*objects: dict[str, Any], fixtures: tuple[str, ...] = ()) -> ClusterSnapshot:
    loaded = [obj for name in fixtures for obj in fixture(name)]
    return ClusterSnapshot.from_objects(("test", obj) for obj in [*loaded, *objects])


def admit(path: str, obj: dict[str, Any] | None, cluster: ClusterSnapshot, operation: str = "CREATE",
          old: dict[str, Any] | None = None) -> Outcome:
    """Run one route as the API server would call it (its own resource and sub-resource)."""
    route = ROUTES[path]
    request = AdmissionRequest(
        uid="test", operation=operation,
        resource=GroupVersionResource(route.api_group, route.api_version, route.resource),
        sub_resource=route.sub_resource, kind=route.kind,
        object=obj if operation != "DELETE" else None,
        old_object=old if operation != "DELETE" else (old or obj))
    return run_route(route, request, cluster)


def make_node(name: str = "node-1", labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
              allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if labels is not None:
        node["metadata"]["labels"] = labels
    if annotations is not None:
        node["metadata"]["annotations"] = annotations
    if allocatable is not None:
        node["status"] = {"allocatable": allocatable}
    return node


def make_quota(name: str, namespace: str = "default", *, parent: str | None = None, is_parent: bool = False,
               tree_id: str | None = None, min: dict[str, Any] | None = None, max: dict[str, Any] | None = None,
               namespaces: list[str] | None = None, labels: dict[str, str] | None = None,
               annotations: dict[str, str] | None = None, used: dict[str, Any] | None = None) -> dict[str, Any]:
    all_labels = dict(labels or {})
    if parent is not None:
        all_labels["quota.scheduling.koordinator.sh/parent"] = parent
    if is_parent:
        all_labels["quota.scheduling.koordinator.sh/is-parent"] = "true"
    if tree_id is not None:
        all_labels["quota.scheduling.koordinator.sh/tree-id"] = tree_id
    all_annotations = dict(annotations or {})
    if namespaces is not None:
        all_annotations["quota.scheduling.koordinator.sh/namespaces"] = json.dumps(namespaces)
    quota: dict[str, Any] = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
                             "metadata": {"name": name, "namespace": namespace}, "spec": {}}
    if all_labels:
        quota["metadata"]["labels"] = all_labels
    if all_annotations:
        quota["metadata"]["annotations"] = all_annotations
    if min is not None:
        quota["spec"]["min"] = min
    if max is not None:
        quota["spec"]["max"] = max
    if used is not None:
        quota["status"] = {"used": used}
    return quota


def make_pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def make_slo_config(data: dict[str, Any], name: str = "slo-controller-config",
                    namespace: str = "koordinator-system") -> dict[str, Any]:
    """The ConfigMap; dict values are JSON-encoded as the strategy text."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"koordinator.sh/configmap-type": "slo-controller-config"}},
            "data": {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}}


def make_reservation(name: str = "reserve-1", labels: dict[str, str] | None = None, template: bool = True) -> dict[str, Any]:
    reservation: dict[str, Any] = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
                                   "metadata": {"name": name, "labels": labels or {}},
                                   "spec": {"owners": [{"object": {"name": "owner"}}]}}
    if template:
        reservation["spec"]["template"] = {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]}}
    return reservation


def patched(obj: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """The object after the outcome's JSONPatch, as an API server would apply it."""
    import jsonpatch

    return jsonpatch.apply_patch(obj, outcome.patch)

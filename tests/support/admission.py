"""Driving admission in-process: snapshots, requests, reviews, and one call per route or plugin chain.

`mutate`/`validate` run the pod plugins of `policies` directly; `admit` runs one webhook route as the
API server would call it; `admission_review` is the wire body for the HTTPS tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from colocate.cluster.files import read_manifest_file
from policies.admission.plugin import AdmissionContext, AdmissionRequest, GroupVersionResource
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.objects import json_copy
from tests.support.builders import KOORD_PRIORITY_CLASSES
from webhook.admission import Outcome, run_route
from webhook.registry import default_routes

ROUTES = default_routes().by_path()
QUOTA_MUTATE = "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"
QUOTA_VALIDATE = "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"

_uids = itertools.count(1)


def make_snapshot(
    *objects: Mapping[str, Any], priority_classes: bool = True, fixtures: Sequence[Path] = ()
) -> ClusterSnapshot:
    """The webhook's view of a cluster holding `objects`, the objects of the `fixtures` manifest
    files before them and, with `priority_classes`, Koordinator's four priority classes first."""
    loaded = [obj for path in fixtures for obj in read_manifest_file(path)]
    all_objects: Iterable[Mapping[str, Any]] = [
        *(KOORD_PRIORITY_CLASSES if priority_classes else []),
        *loaded,
        *objects,
    ]
    return ClusterSnapshot.from_objects(("test", obj) for obj in all_objects)


def pod_request(
    pod: Mapping[str, Any] | None,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    namespace: str | None = None,
) -> AdmissionRequest:
    meta = (pod or old or {}).get("metadata", {})
    return AdmissionRequest(
        uid=f"uid-{next(_uids)}",
        operation=operation,
        resource=GroupVersionResource("", "v1", "pods"),
        kind="Pod",
        namespace=namespace if namespace is not None else meta.get("namespace", ""),
        name=meta.get("name", ""),
        object=pod,
        old_object=old,
    )


def context(
    pod: Mapping[str, Any] | None,
    snapshot: ClusterSnapshot | None = None,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    rand: int | None = None,
    explain: bool = False,
) -> AdmissionContext:
    """An AdmissionContext; `rand` fixes every probability draw."""
    ctx = AdmissionContext(
        pod_request(pod, operation, old), snapshot or make_snapshot(), effects=[] if explain else None
    )
    if rand is not None:
        ctx.rand_int = lambda n: rand
    return ctx


def admission_review(
    obj: Mapping[str, Any] | None,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    resource: str = "pods",
    sub_resource: str = "",
    api_version: str = "admission.k8s.io/v1",
    uid: str | None = None,
    kind: str = "Pod",
) -> dict[str, Any]:
    meta = (obj or old or {}).get("metadata", {})
    request: dict[str, Any] = {
        "uid": uid or f"uid-{next(_uids)}",
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": resource},
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "tester"},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def mutate(
    pod: Mapping[str, Any],
    snapshot: ClusterSnapshot | None = None,
    *,
    operation: str = "CREATE",
    rand: int | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """The pod after every `/mutate-pod` plugin, in order; raises `Denied` like the handler would."""
    from policies.admission.pod_mutation import pod_mutating_plugins

    ctx = context(pod, snapshot, operation=operation, rand=rand)
    if namespace is not None:
        ctx.request = pod_request(pod, operation, namespace=namespace)
    working: dict[str, Any] = json_copy(dict(pod))
    for plugin in pod_mutating_plugins():
        plugin.mutate(working, ctx)
    return working


def validate(
    pod: Mapping[str, Any] | None,
    snapshot: ClusterSnapshot | None = None,
    *,
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
) -> None:
    """Run every `/validate-pod` plugin; raises `Denied` with the first refusal."""
    from policies.admission.pod_validation import pod_validating_plugins

    ctx = context(pod, snapshot, operation=operation, old=old)
    for plugin in pod_validating_plugins():
        plugin.validate(pod if pod is not None else old, ctx)


def admit(
    path: str,
    obj: dict[str, Any] | None,
    cluster: ClusterSnapshot,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
) -> Outcome:
    """Run one route as the API server would call it (its own resource and sub-resource)."""
    route = ROUTES[path]
    request = AdmissionRequest(
        uid="test",
        operation=operation,
        resource=GroupVersionResource(route.api_group, route.api_version, route.resource),
        sub_resource=route.sub_resource,
        kind=route.kind,
        object=obj if operation != "DELETE" else None,
        old_object=old if operation != "DELETE" else (old or obj),
    )
    return run_route(route, request, cluster)


def patched(obj: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """The object after the outcome's JSONPatch, as an API server would apply it."""
    import jsonpatch

    result: dict[str, Any] = jsonpatch.apply_patch(obj, outcome.patch)
    return result

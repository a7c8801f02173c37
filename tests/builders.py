"""Tiny builders for test objects: `make_pod(qos="BE", requests={"cpu": "1"})`."""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from policies.admission import AdmissionContext, AdmissionRequest, GroupVersionResource
from policies.snapshot import ClusterSnapshot
from policies.constants import LABEL_QOS_CLASS

_uids = itertools.count(1)


def make_container(name: str = "main", requests: Mapping[str, Any] | None = None,
                   limits: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "busybox", **extra}
    resources = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    return container


def make_pod(name: str = "pod-1", namespace: str = "default", *, labels: Mapping[str, str] | None = None,
             annotations: Mapping[str, str] | None = None, qos: str | None = None,
             priority: int | None = None, requests: Mapping[str, Any] | None = None,
             limits: Mapping[str, Any] | None = None, containers: list[dict[str, Any]] | None = None,
             init_containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    all_labels = dict(labels or {})
    if qos is not None:
        all_labels[LABEL_QOS_CLASS] = qos
    if all_labels:
        metadata["labels"] = all_labels
    if annotations:
        metadata["annotations"] = dict(annotations)
    pod_spec: dict[str, Any] = {"containers": containers if containers is not None else [make_container(requests=requests, limits=limits)]}
    if init_containers is not None:
        pod_spec["initContainers"] = init_containers
    if priority is not None:
        pod_spec["priority"] = priority
    pod_spec.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def make_profile(name: str = "profile", *, metadata_annotations: Mapping[str, str] | None = None,
                 **spec: Any) -> dict[str, Any]:
    """A ClusterColocationProfile; keyword arguments are its spec fields (Koordinator's spelling)."""
    metadata: dict[str, Any] = {"name": name}
    if metadata_annotations:
        metadata["annotations"] = dict(metadata_annotations)
    return {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": metadata, "spec": spec}


def make_namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}


def make_priority_class(name: str, value: int, preemption_policy: str | None = "PreemptLowerPriority") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    if preemption_policy:
        obj["preemptionPolicy"] = preemption_policy
    return obj


KOORD_PRIORITY_CLASSES = [make_priority_class("koord-prod", 9000), make_priority_class("koord-mid", 7000),
                          make_priority_class("koord-batch", 5000), make_priority_class("koord-free", 3000)]


def make_snapshot(*objects: Mapping[str, Any], priority_classes: bool = True) -> ClusterSnapshot:
    all_objects: Iterable[Mapping[str, Any]] = [*(KOORD_PRIORITY_CLASSES if priority_classes else []), *objects]
    return ClusterSnapshot.from_objects(("test", obj) for obj in all_objects)


def pod_request(pod: Mapping[str, Any] | None, operation: str = "CREATE", old: Mapping[str, Any] | None = None,
                namespace: str | None = None) -> AdmissionRequest:
    meta = (pod or old or {}).get("metadata", {})
    return AdmissionRequest(
        uid=f"uid-{next(_uids)}", operation=operation, resource=GroupVersionResource("", "v1", "pods"),
        kind="Pod", namespace=namespace if namespace is not None else meta.get("namespace", ""),
        name=meta.get("name", ""), object=pod, old_object=old,
    )


def context(pod: Mapping[str, Any] | None, snapshot: ClusterSnapshot | None = None, operation: str = "CREATE",
            old: Mapping[str, Any] | None = None, rand: int | None = None, explain: bool = False) -> AdmissionContext:
    """An AdmissionContext; `rand` fixes every probability draw."""
    ctx = AdmissionContext(pod_request(pod, operation, old), snapshot or make_snapshot(),
                           effects=[] if explain else None)
    if rand is not None:
        ctx.rand_int = lambda n: rand
    return ctx


def admission_review(obj: Mapping[str, Any] | None, operation: str = "CREATE", old: Mapping[str, Any] | None = None,
                     resource: str = "pods", sub_resource: str = "", api_version: str = "admission.k8s.io/v1",
                     uid: str | None = None, kind: str = "Pod") -> dict[str, Any]:
    meta = (obj or old or {}).get("metadata", {})
    request: dict[str, Any] = {
        "uid": uid or f"uid-{next(_uids)}",
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": resource},
        "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
        "operation": operation, "userInfo": {"username": "tester"},
        "object": obj, "oldObject": old, "dryRun": False,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def mutate(pod: Mapping[str, Any], snapshot: ClusterSnapshot | None = None, *, operation: str = "CREATE",
           rand: int | None = None, namespace: str | None = None) -> dict[str, Any]:
    """The pod after every `/mutate-pod` plugin, in order; raises `Denied` like the handler would."""
    from policies.objects import json_copy
    from policies.pod_mutation import pod_mutating_plugins

    ctx = context(pod, snapshot, operation=operation, rand=rand)
    if namespace is not None:
        ctx.request = pod_request(pod, operation, namespace=namespace)
    working = json_copy(dict(pod))
    for plugin in pod_mutating_plugins():
        plugin.mutate(working, ctx)
    return working


def validate(pod: Mapping[str, Any] | None, snapshot: ClusterSnapshot | None = None, *, operation: str = "CREATE",
             old: Mapping[str, Any] | None = None) -> None:
    """Run every `/validate-pod` plugin; raises `Denied` with the first refusal."""
    from policies.pod_validation import pod_validating_plugins

    ctx = context(pod, snapshot, operation=operation, old=old)
    for plugin in pod_validating_plugins():
        plugin.validate(pod if pod is not None else old, ctx)

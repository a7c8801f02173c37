"""The one set of builders for test objects: `make_pod(qos="BE", requests={"cpu": "1"})`, used by
colocate's own tests (through `tests.support.builders`) and by plugin authors' (docs/plugins.md).

Every builder returns a plain dict, as the API server would send it, and writes only what it is
asked for: a map argument left at `None` leaves its field out, an empty map (`labels={}`) writes an
empty field. Defaults are the smallest valid object; a test that depends on a field passes it. Label and
annotation keys are spelled out here, not imported from `policies.apis.constants`, so a typo there
fails a test instead of agreeing with itself.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

LABEL_QOS_CLASS = "koordinator.sh/qosClass"
LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
ANNOTATION_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
KUBELET_MAX_PODS = "110"  # kubelet's default --max-pods: what a node with cpu and memory reports for `pods`

#: when the NodeMetrics were reported, and the scheduler tests' clock a minute later
METRIC_TIME = "2024-05-01T10:00:00Z"
NOW = "2024-05-01T10:01:00Z"


# Pods --------------------------------------------------------------------------------------------


def make_container(
    name: str = "main",
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    *,
    image: str = "busybox",
    **extra: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, **extra}
    resources = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    return container


def pod_uid(name: str, namespace: str = "default") -> str:
    """The UID `make_pod(..., uid=True)` gives a pod: a UUID, as the API server assigns, stable per
    name (the node agent refuses pods whose UID is not a UUID)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod/{namespace}/{name}"))


def container_hash(name: str) -> str:
    """A 64-hex container ID (what containerd and docker report) standing for `name`: the agent
    refuses `containerID`s of any other form."""
    return hashlib.sha256(name.encode()).hexdigest()


def make_pod(
    name: str = "pod-1",
    namespace: str = "default",
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    qos: str | None = None,
    priority_class: str | None = None,
    owner_kind: str | None = None,
    created: str | None = None,
    priority: int | None = None,
    node: str | None = None,
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    containers: Sequence[dict[str, Any]] | None = None,
    init_containers: Sequence[dict[str, Any]] | None = None,
    phase: str | None = None,
    scheduled_at: str | None = None,
    initialized_at: str | None = None,
    uid: str | bool | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Pod. `requests`/`limits` go to one container `main` unless `containers` is given; `qos` and
    `priority_class` are Koordinator's labels; `node` is spec.nodeName; `scheduled_at` and
    `initialized_at` are the times of the PodScheduled and Initialized conditions; `uid=True` gives
    the pod its `pod_uid`, as the API server gives every pod one (the node agent needs it); any other keyword
    is a spec field (Kubernetes' spelling, e.g. `priorityClassName="koord-batch"`)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        metadata["uid"] = pod_uid(name, namespace) if uid is True else uid
    if labels is not None or qos is not None or priority_class is not None:
        all_labels = dict(labels or {})
        if qos is not None:
            all_labels[LABEL_QOS_CLASS] = qos
        if priority_class is not None:
            all_labels[LABEL_PRIORITY_CLASS] = priority_class
        metadata["labels"] = all_labels
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if owner_kind is not None:
        metadata["ownerReferences"] = [{"kind": owner_kind, "name": "owner"}]
    if created is not None:
        metadata["creationTimestamp"] = created
    pod_spec: dict[str, Any] = {
        "containers": list(containers) if containers is not None else [make_container(requests=requests, limits=limits)]
    }
    if init_containers is not None:
        pod_spec["initContainers"] = list(init_containers)
    if priority is not None:
        pod_spec["priority"] = priority
    if node is not None:
        pod_spec["nodeName"] = node
    pod_spec.update(spec)
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": at}
        for kind, at in (("PodScheduled", scheduled_at), ("Initialized", initialized_at))
        if at is not None
    ]
    if conditions or phase is not None:
        pod["status"] = {"conditions": conditions} if conditions else {}
        if phase is not None:
            pod["status"]["phase"] = phase
    return pod


# Nodes -------------------------------------------------------------------------------------------


def make_node(
    name: str = "node-1",
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    allocatable: Mapping[str, Any] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    extra: Mapping[str, Any] | None = None,
    raw_allocatable: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Node. `allocatable` is written as given; or `cpu`, `memory` and `extra` resources make the
    allocatable of a schedulable node, with the kubelet's default `pods: 110`. `raw_allocatable` is
    Koordinator's raw-allocatable annotation (the allocatable before amplification)."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None or raw_allocatable is not None:
        metadata["annotations"] = dict(annotations or {})
        if raw_allocatable is not None:
            metadata["annotations"][ANNOTATION_RAW_ALLOCATABLE] = json.dumps(raw_allocatable)
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    if allocatable is not None:
        node["status"] = {"allocatable": dict(allocatable)}
    elif cpu is not None or memory is not None or extra is not None:
        sized = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value is not None}
        node["status"] = {"allocatable": {**sized, "pods": KUBELET_MAX_PODS, **(extra or {})}}
    if capacity is not None:
        node.setdefault("status", {})["capacity"] = dict(capacity)
    return node


def make_metric(
    name: str = "node-1",
    *,
    cpu: str | None = "0",
    memory: str | None = "0",
    update_time: str | None = METRIC_TIME,
    pods: list[dict[str, Any]] | None = None,
    aggregated: list[dict[str, Any]] | None = None,
    system: dict[str, Any] | None = None,
    report_interval: int | None = 60,
    no_node_metric: bool = False,
) -> dict[str, Any]:
    """A NodeMetric as koordlet reports it: node usage, per-pod usage (`pods`, see `pod_metric`),
    aggregated percentiles and system usage."""
    status: dict[str, Any] = {}
    if update_time:
        status["updateTime"] = update_time
    if not no_node_metric:
        usage = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        node_metric: dict[str, Any] = {"nodeUsage": {"resources": usage} if usage else {}}
        if aggregated:
            node_metric["aggregatedNodeUsages"] = aggregated
        if system:
            node_metric["systemUsage"] = {"resources": system}
        status["nodeMetric"] = node_metric
    if pods:
        status["podsMetric"] = pods
    spec = {"metricCollectPolicy": {"reportIntervalSeconds": report_interval}} if report_interval else {}
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


def pod_metric(
    name: str, namespace: str = "default", *, cpu: str = "0", memory: str = "0", priority: str = "koord-prod"
) -> dict[str, Any]:
    """One entry of a NodeMetric's `podsMetric`."""
    return {
        "name": name,
        "namespace": namespace,
        "priority": priority,
        "podUsage": {"resources": {"cpu": cpu, "memory": memory}},
    }


def make_node_slo(
    name: str = "node-1",
    *,
    threshold: Mapping[str, Any] | None = None,
    resource_qos: Mapping[str, Any] | None = None,
    cpu_burst: Mapping[str, Any] | None = None,
    host_applications: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A NodeSLO: `threshold` is spec.resourceUsedThresholdWithBE, `resource_qos` resourceQOSStrategy,
    `cpu_burst` cpuBurstStrategy; fields left None are left out."""
    spec: dict[str, Any] = {}
    for key, value in (
        ("resourceUsedThresholdWithBE", threshold),
        ("resourceQOSStrategy", resource_qos),
        ("cpuBurstStrategy", cpu_burst),
        ("hostApplications", host_applications),
    ):
        if value is not None:
            spec[key] = value
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": name}, "spec": spec}


# Cluster-scoped configuration ---------------------------------------------------------------------


def make_namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}


def make_priority_class(
    name: str, value: int, preemption_policy: str | None = "PreemptLowerPriority"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if preemption_policy:
        obj["preemptionPolicy"] = preemption_policy
    return obj


KOORD_PRIORITY_CLASSES = [
    make_priority_class("koord-prod", 9000),
    make_priority_class("koord-mid", 7000),
    make_priority_class("koord-batch", 5000),
    make_priority_class("koord-free", 3000),
]


def make_profile(
    name: str = "profile", *, metadata_annotations: Mapping[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A ClusterColocationProfile; keyword arguments are its spec fields (Koordinator's spelling)."""
    metadata: dict[str, Any] = {"name": name}
    if metadata_annotations:
        metadata["annotations"] = dict(metadata_annotations)
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": metadata,
        "spec": spec,
    }


def make_slo_config(
    data: Mapping[str, Any], name: str = "slo-controller-config", namespace: str = "koordinator-system"
) -> dict[str, Any]:
    """The slo-controller ConfigMap; dict values are JSON-encoded as the strategy text."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"koordinator.sh/configmap-type": "slo-controller-config"},
        },
        "data": {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()},
    }


# Scheduling objects ------------------------------------------------------------------------------


def make_quota(
    name: str,
    namespace: str = "default",
    *,
    parent: str | None = None,
    is_parent: bool = False,
    tree_id: str | None = None,
    min: Mapping[str, Any] | None = None,
    max: Mapping[str, Any] | None = None,
    namespaces: list[str] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    used: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ElasticQuota; `parent`, `is_parent`, `tree_id` and `namespaces` are Koordinator's quota labels
    and annotation."""
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
    quota: dict[str, Any] = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {},
    }
    if all_labels:
        quota["metadata"]["labels"] = all_labels
    if all_annotations:
        quota["metadata"]["annotations"] = all_annotations
    if min is not None:
        quota["spec"]["min"] = dict(min)
    if max is not None:
        quota["spec"]["max"] = dict(max)
    if used is not None:
        quota["status"] = {"used": dict(used)}
    return quota


def make_reservation(
    name: str = "reserve-1", labels: Mapping[str, str] | None = None, template: bool = True
) -> dict[str, Any]:
    """A Reservation owned by `owner`; with `template`, one container requesting a cpu."""
    reservation: dict[str, Any] = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"owners": [{"object": {"name": "owner"}}]},
    }
    if template:
        reservation["spec"]["template"] = {
            "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]}
        }
    return reservation

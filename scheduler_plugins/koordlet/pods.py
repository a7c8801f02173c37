"""What the QoS manager needs of a pod: its classes, priority, cgroup dirs and requests, read once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_EVICTION_POLICY,
    ANNOTATION_EVICTION_PRIORITY,
    BATCH_CPU,
    BATCH_MEMORY,
    EXTENDED_RESOURCE_NAMES,
    LABEL_EVICTION_ENABLED,
    LABEL_KOORDINATOR_PRIORITY,
    PRIORITY_DEFAULT_VALUES,
    KubernetesQoSClass,
    PriorityClass,
    QoSClass,
)
from policies.apis.objects import annotations_of, labels_of, metadata_of, spec_of, status_of
from policies.apis.qos import defaulted_priority_class, defaulted_qos_class, kubernetes_qos_class, raw_qos_class
from policies.apis.quantity import QuantityError, resource_list
from scheduler_plugins.koordlet.cgroups.ids import RefusedPath
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout, container_id

#: told of every pod field refused as a path: the pod and why (the agent counts and reports it)
OnRefused = Callable[[Mapping[str, Any], RefusedPath], None]

#: read per pod and round: a member of an enum class costs an attribute lookup through its type
_BE: Final = QoSClass.BE
_BEST_EFFORT: Final = KubernetesQoSClass.BEST_EFFORT


def _amounts(raw: Any) -> dict[str, int]:
    try:
        return resource_list(raw if isinstance(raw, Mapping) else None)
    except QuantityError:
        return {}


@dataclass(frozen=True)
class ContainerView:
    name: str
    dir: str | None  # None until the container runs (no container id yet)
    requests: Mapping[str, int]
    limits: Mapping[str, int]


@dataclass(frozen=True)
class PodView:
    pod: Mapping[str, Any]
    key: str  # namespace/name
    uid: str
    kube_qos: str
    qos: QoSClass  # defaulted Koordinator class
    raw_qos: QoSClass
    priority: int  # spec.priority (0 when absent)
    dir: str
    containers: tuple[ContainerView, ...]

    @property
    def is_be(self) -> bool:
        """BE as the suppress formula counts it: the BE label, or Kubernetes BestEffort."""
        return self.raw_qos is _BE or self.kube_qos == _BEST_EFFORT

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]

    def request(self, resource: str) -> int:
        return sum(c.requests.get(resource, 0) for c in self.containers)

    def batch_cpu_request(self) -> int:
        return sum(c.requests.get(BATCH_CPU, 0) for c in self.containers)

    def batch_memory_request(self) -> int:
        return sum(c.requests.get(BATCH_MEMORY, 0) for c in self.containers)

    @property
    def eviction_priority(self) -> int:
        try:
            return int(annotations_of(self.pod).get(ANNOTATION_EVICTION_PRIORITY, "0"))
        except ValueError:
            return 0

    @property
    def priority_class(self) -> PriorityClass:
        """GetPodPriorityClassWithDefault: the labelled or numeric band, else the QoS class's."""
        return defaulted_priority_class(self.pod, self.qos)

    @property
    def priority_value(self) -> int:
        """GetPodPriorityValueWithDefault: a non-zero `spec.priority`, else the band's default."""
        return self.priority or PRIORITY_DEFAULT_VALUES.get(self.priority_class, 0)

    @property
    def label_priority(self) -> int:
        """The `koordinator.sh/priority` sub-priority label (GetPodPriorityLabel), else the priority."""
        try:
            return int(labels_of(self.pod).get(LABEL_KOORDINATOR_PRIORITY, ""))
        except ValueError:
            return self.priority_value

    @property
    def evict_enabled(self) -> bool:
        """PodEvictEnabled: the `koordinator.sh/eviction-enabled: "true"` label."""
        return labels_of(self.pod).get(LABEL_EVICTION_ENABLED) == "true"

    def eviction_policy_allows(self, feature: str) -> bool:
        """IsEvictionPolicyAllowed: without the `koordinator.sh/eviction-policy` annotation every
        feature may evict the pod; with it, only the features its JSON list names (a malformed
        list allows none)."""
        raw = annotations_of(self.pod).get(ANNOTATION_EVICTION_POLICY)
        if raw is None:
            return True
        try:
            allowed = json.loads(raw)
        except ValueError:
            return False
        return isinstance(allowed, list) and feature in allowed

    def typed_request(self, resource: str) -> tuple[str, int]:
        """GetRequestTypeAndValueFromPod: the pod's request of `resource` (cpu or memory) in the
        name its band consumes — mid-*, batch-*, or the plain name for every other band."""
        name = EXTENDED_RESOURCE_NAMES.get(self.priority_class, {}).get(resource, resource)
        return name, sum(max(0, c.requests.get(name, 0)) for c in self.containers)


def is_active(pod: Mapping[str, Any]) -> bool:
    phase = status_of(pod).get("phase")
    return phase not in ("Succeeded", "Failed") and not metadata_of(pod).get("deletionTimestamp")


def pod_view(pod: Mapping[str, Any], layout: CgroupLayout, on_refused: OnRefused | None = None) -> PodView:
    """The pod as the strategies see it; `RefusedPath` when its UID is not a UUID. A container
    whose ID is not its runtime's format gets no cgroup (as if not running), told to `on_refused`."""
    metadata = metadata_of(pod)
    kube_qos = kubernetes_qos_class(pod)
    pod_dir = layout.pod_dir(kube_qos, metadata.get("uid"))
    containers = []
    for container in spec_of(pod).get("containers") or []:
        if not isinstance(container, Mapping):
            continue
        resources = container.get("resources") or {}
        try:
            found = container_id(pod, str(container.get("name")))
        except RefusedPath as refused:
            found = None
            if on_refused is not None:
                on_refused(pod, refused)
        containers.append(
            ContainerView(
                str(container.get("name") or ""),
                layout.container_dir(pod_dir, *found) if found else None,
                _amounts(resources.get("requests")),
                _amounts(resources.get("limits")),
            )
        )
    priority = spec_of(pod).get("priority")
    return PodView(
        pod,
        f"{metadata.get('namespace') or 'default'}/{metadata.get('name') or ''}",
        str(metadata.get("uid") or ""),
        kube_qos,
        defaulted_qos_class(pod, kube_qos),
        raw_qos_class(pod),
        priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        pod_dir,
        tuple(containers),
    )


def active_pod_views(
    pods: Iterable[Mapping[str, Any]], layout: CgroupLayout, on_refused: OnRefused | None = None
) -> tuple[PodView, ...]:
    """The views of the running pods; a pod whose UID is refused is left out (and told)."""
    return every_pod_view((p for p in pods if is_active(p)), layout, on_refused)


def every_pod_view(
    pods: Iterable[Mapping[str, Any]], layout: CgroupLayout, on_refused: OnRefused | None = None
) -> tuple[PodView, ...]:
    """The views of `pods`; a pod whose UID is refused is left out (and told)."""
    views = []
    for pod in pods:
        try:
            views.append(pod_view(pod, layout, on_refused))
        except RefusedPath as refused:
            if on_refused is not None:
                on_refused(pod, refused)
    return tuple(views)

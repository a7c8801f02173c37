"""What the QoS manager needs of a pod: its classes, priority, cgroup dirs and requests, read once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.constants import (
    ANNOTATION_EVICTION_PRIORITY,
    BATCH_CPU,
    BATCH_MEMORY,
    KubernetesQoSClass,
    QoSClass,
)
from policies.objects import annotations_of, metadata_of, spec_of
from policies.qos import defaulted_qos_class, kubernetes_qos_class, raw_qos_class
from policies.quantity import QuantityError, resource_list
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout, container_id


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
        return self.raw_qos is QoSClass.BE or self.kube_qos == KubernetesQoSClass.BEST_EFFORT

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


def is_active(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not metadata_of(pod).get("deletionTimestamp")


def pod_view(pod: Mapping[str, Any], layout: CgroupLayout) -> PodView:
    metadata = metadata_of(pod)
    kube_qos = kubernetes_qos_class(pod)
    pod_dir = layout.pod_dir(kube_qos, str(metadata.get("uid") or ""))
    containers = []
    for container in spec_of(pod).get("containers") or []:
        if not isinstance(container, Mapping):
            continue
        resources = container.get("resources") or {}
        found = container_id(pod, str(container.get("name")))
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

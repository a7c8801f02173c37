"""A pod as the scheduler sees it: the untouched object plus values derived once.

The object stays a plain dict (conventions: objects stay dicts); `PodInfo` only caches what the
plugins derive from it on every node of every cycle (requests, classes), so the hot loops do no
parsing. A transformer that changes a pod builds a new PodInfo from a deep copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from policies.apis.constants import PRIORITY_DEFAULT_VALUES, RESOURCE_CPU, RESOURCE_MEMORY, PriorityClass, QoSClass
from policies.apis.object_view import ObjectView
from policies.apis.objects import json_copy
from policies.apis.qos import (
    defaulted_priority_class,
    defaulted_qos_class,
    kubernetes_qos_class,
    raw_priority_class,
    sub_priority,
    translate_resource_name,
)
from policies.apis.quantity import resource_list
from policies.apis.resources import pod_resources

#: Defaults kube-scheduler substitutes for a container with no cpu/memory request (scoring only):
#: its NonMissingContainerRequests for the non-zero requests.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    RESOURCE_CPU: DEFAULT_MILLI_CPU_REQUEST,
    RESOURCE_MEMORY: DEFAULT_MEMORY_REQUEST,
}

Vector = dict[str, int]


clone = json_copy  # a deep copy of a JSON-shaped object, shared with the policy engine


class PodInfo(ObjectView):
    """Read-only view of one pod. Never mutate `obj`; derive a new PodInfo instead."""

    __slots__ = ()
    obj: dict[str, Any]

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    @cached_property
    def namespace(self) -> str:
        return self.metadata.get("namespace") or "default"

    @cached_property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def node_name(self) -> str:
        return self.spec.get("nodeName") or ""

    @cached_property
    def requests(self) -> Vector:
        return pod_resources(self.obj, "requests", resource_list)

    @cached_property
    def limits(self) -> Vector:
        return pod_resources(self.obj, "limits", resource_list)

    @cached_property
    def non_zero_requests(self) -> Vector:
        """Requests with the 100m / 200Mi defaults per container (explicit 0 stays 0)."""
        return pod_resources(self.obj, "requests", resource_list, NON_ZERO_DEFAULTS)

    @cached_property
    def kube_qos(self) -> str:
        """`status.qosClass` when set, else Kubernetes' GetPodQOS over cpu/memory requests and limits."""
        return kubernetes_qos_class(self.obj)

    @cached_property
    def qos_class(self) -> QoSClass:
        return defaulted_qos_class(self.obj, self.kube_qos)

    @cached_property
    def priority_class(self) -> PriorityClass:
        return defaulted_priority_class(self.obj, self.qos_class)

    @cached_property
    def qos_requests(self) -> Vector:
        """Requests in the band the pod consumes: a batch (mid) pod's cpu/memory are counted as
        `kubernetes.io/batch-*` (`mid-*`); already-translated names are kept as they are."""
        if self.priority_class not in (PriorityClass.BATCH, PriorityClass.MID):
            return self.requests
        out: Vector = {}
        for name, amount in self.requests.items():
            if name in (RESOURCE_CPU, RESOURCE_MEMORY):
                name = translate_resource_name(self.priority_class, name)
            out[name] = out.get(name, 0) + amount
        return out

    @cached_property
    def priority(self) -> int:
        """`spec.priority`, else the default value of the labelled priority class, else 0."""
        value = self.spec.get("priority")
        if value is not None:
            return int(value)
        return PRIORITY_DEFAULT_VALUES.get(raw_priority_class(self.obj), 0)

    @cached_property
    def sub_priority(self) -> int:
        return sub_priority(self.obj)

    @cached_property
    def is_daemonset_pod(self) -> bool:
        return any(ref.get("kind") == "DaemonSet" for ref in self.metadata.get("ownerReferences") or [])

    @cached_property
    def is_terminated(self) -> bool:
        return self.status.get("phase") in ("Succeeded", "Failed")

    #: derived values that depend only on the pod's spec and labels
    SPEC_DERIVED = (
        "requests",
        "limits",
        "non_zero_requests",
        "kube_qos",
        "qos_class",
        "priority_class",
        "qos_requests",
        "priority",
        "sub_priority",
        "is_daemonset_pod",
    )

    def with_status_changes(self, obj: dict[str, Any]) -> PodInfo:
        """A PodInfo for `obj`, a copy of this pod that differs only in `spec.nodeName` and
        `status` (a binding): the spec-derived values carry over instead of being recomputed."""
        other = PodInfo(obj)
        for name in self.SPEC_DERIVED:
            if name in self.__dict__:
                other.__dict__[name] = self.__dict__[name]
        return other

    def condition_time(self, kind: str) -> str | None:
        """`lastTransitionTime` of condition `kind` when it is True, else None."""
        for cond in self.status.get("conditions") or []:
            if cond.get("type") == kind and cond.get("status") == "True":
                return cond.get("lastTransitionTime") or None
        return None

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"

"""A pod's Koordinator QoS class and priority class (spec section 6), and the resource names a
priority class consumes.

"Raw" values come only from what the pod says (label, spec.priority); "defaulted" values fall back
the way Koordinator does (`apis/extension`), through the Kubernetes QoS class. The webhook and the
scheduler both derive them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.apis.constants import (
    EXTENDED_RESOURCE_NAMES,
    KNOWN_PRIORITY_CLASSES,
    KNOWN_QOS_CLASSES,
    LABEL_KOORDINATOR_PRIORITY,
    LABEL_PRIORITY_CLASS,
    LABEL_QOS_CLASS,
    PRIORITY_BANDS,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    KubernetesQoSClass,
    PriorityClass,
    QoSClass,
)
from policies.apis.objects import labels_of, spec_of
from policies.apis.quantity import Quantity, QuantityError

_QOS_COMPUTE_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


#: label text -> class, the known classes only (a dict lookup: an Enum call costs a micro-second per pod)
_QOS_BY_LABEL: Final[Mapping[object, QoSClass]] = {value: QoSClass(value) for value in KNOWN_QOS_CLASSES}
_PRIORITY_BY_LABEL: Final[Mapping[object, PriorityClass]] = {
    value: PriorityClass(value) for value in KNOWN_PRIORITY_CLASSES
}


def raw_qos_class(pod: Mapping[str, Any]) -> QoSClass:
    return _qos_of_labels(labels_of(pod))


def _qos_of_labels(labels: Mapping[str, Any]) -> QoSClass:
    return _QOS_BY_LABEL.get(labels.get(LABEL_QOS_CLASS), QoSClass.NONE)


def priority_class_of_value(priority: object) -> PriorityClass:
    """The band a numeric priority falls in."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        return PriorityClass.NONE
    for priority_class, (low, high) in PRIORITY_BANDS.items():
        if low <= priority <= high:
            return priority_class
    return PriorityClass.NONE


def raw_priority_class(pod: Mapping[str, Any]) -> PriorityClass:
    return _raw_priority(labels_of(pod), pod)


def _raw_priority(labels: Mapping[str, Any], pod: Mapping[str, Any]) -> PriorityClass:
    if LABEL_PRIORITY_CLASS in labels:
        return _PRIORITY_BY_LABEL.get(labels[LABEL_PRIORITY_CLASS], PriorityClass.NONE)
    return priority_class_of_value(spec_of(pod).get("priority"))


def kubernetes_qos_class(pod: Mapping[str, Any]) -> str:
    """`status.qosClass`, or Kubernetes' GetPodQOS computed over containers and init containers."""
    status = pod.get("status")
    if isinstance(status, Mapping) and status.get("qosClass"):
        return str(status["qosClass"])
    spec = spec_of(pod)
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = (container or {}).get("resources") or {}
        for name, value in _positive_compute(resources.get("requests")):
            requests[name] = requests.get(name, 0) + value
        limits_found = set()
        for name, value in _positive_compute(resources.get("limits")):
            limits_found.add(name)
            limits[name] = limits.get(name, 0) + value
        if not limits_found.issuperset(_QOS_COMPUTE_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return KubernetesQoSClass.BEST_EFFORT
    if (
        guaranteed
        and len(requests) == len(limits)
        and all(limits.get(name) == value for name, value in requests.items())
    ):
        return KubernetesQoSClass.GUARANTEED
    return KubernetesQoSClass.BURSTABLE


def _positive_compute(resource_list: object) -> list[tuple[str, int]]:
    if not isinstance(resource_list, Mapping):
        return []
    found = []
    for name in _QOS_COMPUTE_RESOURCES:
        if name in resource_list:
            try:
                nanos = Quantity.parse(resource_list[name]).nanos
            except QuantityError:
                continue
            if nanos > 0:
                found.append((name, nanos))
    return found


_QOS_BY_KUBERNETES_QOS: Final[Mapping[str, QoSClass]] = {
    KubernetesQoSClass.GUARANTEED: QoSClass.LSR,
    KubernetesQoSClass.BURSTABLE: QoSClass.LS,
    KubernetesQoSClass.BEST_EFFORT: QoSClass.BE,
}


def defaulted_qos_class(pod: Mapping[str, Any], kube_qos: str | None = None) -> QoSClass:
    """The koordinator label, else mapped from the Kubernetes QoS class (`kube_qos` when the caller
    has it already, else computed)."""
    return _defaulted_qos(raw_qos_class(pod), pod, kube_qos)


def _defaulted_qos(raw: QoSClass, pod: Mapping[str, Any], kube_qos: str | None) -> QoSClass:
    if raw is not QoSClass.NONE:
        return raw
    return _QOS_BY_KUBERNETES_QOS.get(kubernetes_qos_class(pod) if kube_qos is None else kube_qos, QoSClass.NONE)


def defaulted_priority_class(pod: Mapping[str, Any], qos: QoSClass | None = None) -> PriorityClass:
    """The raw priority class, else from the defaulted QoS class (`qos` when the caller has it
    already). NOTE: an empty pod is BestEffort, hence BE, hence koord-batch."""
    raw = raw_priority_class(pod)
    if raw is not PriorityClass.NONE:
        return raw
    return _priority_of_qos(defaulted_qos_class(pod) if qos is None else qos)


def _priority_of_qos(qos: QoSClass) -> PriorityClass:
    if qos is QoSClass.BE:
        return PriorityClass.BATCH
    if qos is QoSClass.NONE:
        return PriorityClass.NONE
    return PriorityClass.PROD


def pod_classes(pod: Mapping[str, Any]) -> tuple[QoSClass, PriorityClass]:
    """`defaulted_qos_class` and `defaulted_priority_class` of the pod, its labels read once (the
    manager reads both of each of a cluster's pods)."""
    labels = labels_of(pod)
    qos = _defaulted_qos(_qos_of_labels(labels), pod, None)
    priority = _raw_priority(labels, pod)
    return qos, priority if priority is not PriorityClass.NONE else _priority_of_qos(qos)


_EXTENDED_BY_CLASS: Final[Mapping[str, Mapping[str, str]]] = {
    cls.value: names for cls, names in EXTENDED_RESOURCE_NAMES.items()
}
_NO_NAMES: Final[Mapping[str, str]] = {}


def translate_resource_name(priority_class: str, resource: str) -> str:
    """The name a pod of `priority_class` consumes `resource` under: koord-prod and none keep the
    name; otherwise only cpu/memory of koord-batch and koord-mid have a mapping, and every other
    (class, name) pair yields "" (nothing is found under it)."""
    if priority_class in (PriorityClass.PROD, PriorityClass.NONE):
        return resource
    return _EXTENDED_BY_CLASS.get(priority_class, _NO_NAMES).get(resource, "")


def sub_priority(pod: Mapping[str, Any]) -> int:
    """`koordinator.sh/priority` as a 32-bit integer (base prefixes accepted); absent or bad = 0."""
    text = labels_of(pod).get(LABEL_KOORDINATOR_PRIORITY, "")
    try:
        value = int(text, 0)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0

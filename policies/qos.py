"""A pod's Koordinator QoS class and priority class (spec section 6).

"Raw" values come only from what the pod says (label, spec.priority); "defaulted" values fall back
the way Koordinator does, through the Kubernetes QoS class.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.constants import (
    KNOWN_PRIORITY_CLASSES,
    KNOWN_QOS_CLASSES,
    LABEL_KOORDINATOR_PRIORITY,
    LABEL_PRIORITY_CLASS,
    LABEL_QOS_CLASS,
    PRIORITY_BANDS,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    PriorityClass,
    QoSClass,
)
from policies.objects import labels_of, spec_of
from policies.quantity import Quantity, QuantityError

_QOS_COMPUTE_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


def raw_qos_class(pod: Mapping[str, Any]) -> QoSClass:
    value = labels_of(pod).get(LABEL_QOS_CLASS)
    return QoSClass(value) if value in KNOWN_QOS_CLASSES else QoSClass.NONE


def priority_class_of_value(priority: object) -> PriorityClass:
    """The band a numeric priority falls in."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        return PriorityClass.NONE
    for priority_class, (low, high) in PRIORITY_BANDS.items():
        if low <= priority <= high:
            return priority_class
    return PriorityClass.NONE


def raw_priority_class(pod: Mapping[str, Any]) -> PriorityClass:
    labels = labels_of(pod)
    if LABEL_PRIORITY_CLASS in labels:
        value = labels[LABEL_PRIORITY_CLASS]
        return PriorityClass(value) if value in KNOWN_PRIORITY_CLASSES else PriorityClass.NONE
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
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


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


_QOS_BY_KUBERNETES_QOS = {"Guaranteed": QoSClass.LSR, "Burstable": QoSClass.LS, "BestEffort": QoSClass.BE}


def defaulted_qos_class(pod: Mapping[str, Any]) -> QoSClass:
    raw = raw_qos_class(pod)
    if raw is not QoSClass.NONE:
        return raw
    return _QOS_BY_KUBERNETES_QOS.get(kubernetes_qos_class(pod), QoSClass.NONE)


def defaulted_priority_class(pod: Mapping[str, Any]) -> PriorityClass:
    raw = raw_priority_class(pod)
    if raw is not PriorityClass.NONE:
        return raw
    qos = defaulted_qos_class(pod)
    if qos is QoSClass.BE:
        return PriorityClass.BATCH
    if qos is QoSClass.NONE:
        return PriorityClass.NONE
    return PriorityClass.PROD


def sub_priority(pod: Mapping[str, Any]) -> int:
    """`koordinator.sh/priority` as a 32-bit integer (base prefixes accepted); absent or bad = 0."""
    text = labels_of(pod).get(LABEL_KOORDINATOR_PRIORITY, "")
    try:
        value = int(text, 0)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0

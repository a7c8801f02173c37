"""Colocation rules for pods (`pkg/webhook/pod/validating/cluster_colocation_profile.go`); every
applicable error is collected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.plugin import Denied
from policies.apis.constants import (
    BATCH_CPU,
    BATCH_MEMORY,
    LABEL_KOORDINATOR_PRIORITY,
    LABEL_QOS_CLASS,
    RESOURCE_CPU,
    PriorityClass,
    QoSClass,
)
from policies.apis.field_errors import FieldError, forbidden, invalid, required
from policies.apis.objects import labels_of
from policies.apis.qos import raw_priority_class, raw_qos_class
from policies.apis.quantity import QuantityError, quantity_list
from policies.apis.resources import pod_resources

_FORBIDDEN_COMBINATIONS: dict[QoSClass, frozenset[PriorityClass]] = {
    QoSClass.BE: frozenset({PriorityClass.NONE, PriorityClass.PROD}),
    QoSClass.LSR: frozenset({PriorityClass.NONE, PriorityClass.MID, PriorityClass.BATCH, PriorityClass.FREE}),
}
_CPU_REQUESTS_PATH = "pod.spec.containers[*].resources.requests"


def immutability_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    errors = []
    if raw_qos_class(old) != raw_qos_class(new):
        errors.append(invalid(f"labels.{LABEL_QOS_CLASS}", raw_qos_class(new).value, "field is immutable"))
    if raw_priority_class(old) != raw_priority_class(new):
        errors.append(invalid("spec.priority", raw_priority_class(new).value, "field is immutable"))
    new_priority = labels_of(new).get(LABEL_KOORDINATOR_PRIORITY, "")
    if labels_of(old).get(LABEL_KOORDINATOR_PRIORITY, "") != new_priority:
        errors.append(invalid(f"labels.{LABEL_KOORDINATOR_PRIORITY}", new_priority, "field is immutable"))
    return errors


def colocation_errors(pod: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    errors = immutability_errors(pod, old) if old is not None else []
    qos, priority = raw_qos_class(pod), raw_priority_class(pod)
    try:
        requests = pod_resources(pod, "requests", quantity_list)
    except QuantityError as exc:
        raise Denied(f"spec.containers[*].resources: Invalid value: {exc}") from exc
    uses_batch = any(name in requests and not requests[name].is_zero() for name in (BATCH_CPU, BATCH_MEMORY))
    if uses_batch and qos is not QoSClass.BE:
        errors.append(
            required(
                f"labels.{LABEL_QOS_CLASS}", "must specify koordinator QoS BE with koordinator colocation resources"
            )
        )
    if priority in _FORBIDDEN_COMBINATIONS.get(qos, frozenset()):
        errors.append(
            forbidden(
                "Pod", f"{LABEL_QOS_CLASS}={qos.value} and priorityClass={priority.value} cannot be used in combination"
            )
        )
    if qos in (QoSClass.LSR, QoSClass.LSE):
        cpu = requests.get(RESOURCE_CPU)
        if cpu is None or cpu.is_zero():
            errors.append(required(_CPU_REQUESTS_PATH, "LSR Pod must declare the requested CPUs"))
        elif cpu.milli_value() % 1000:
            errors.append(invalid(_CPU_REQUESTS_PATH, cpu.canonical(), "the requested CPUs of LSR Pod must be integer"))
    return errors

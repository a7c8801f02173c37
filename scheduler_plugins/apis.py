"""Label keys, annotation keys, resource names and priority/QoS vocabulary (spec §1).

Every key the scheduler side reads lives here, so a typo becomes a single wrong constant rather
than a silently unmatched string. The derivation functions reproduce Koordinator's
`apis/extension` rules exactly; every plugin depends on them.
"""
from __future__ import annotations

from typing import Any, Mapping

# --- labels and annotations ---------------------------------------------------------------------
LABEL_QOS_CLASS = "koordinator.sh/qosClass"
LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
LABEL_SUB_PRIORITY = "koordinator.sh/priority"
ANNOTATION_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
ANNOTATION_USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"
ANNOTATION_LOAD_SCALING_FACTORS = "scheduling.koordinator.sh/load-estimated-scaling-factors"
ANNOTATION_LOAD_SECONDS_AFTER_SCHEDULED = (
    "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
)
ANNOTATION_LOAD_SECONDS_AFTER_INITIALIZED = (
    "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"
)

# --- resource names -----------------------------------------------------------------------------
CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
MID_CPU = "kubernetes.io/mid-cpu"
MID_MEMORY = "kubernetes.io/mid-memory"

# --- QoS classes and priority classes -----------------------------------------------------------
QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM, QOS_NONE = "LSE", "LSR", "LS", "BE", "SYSTEM", ""
KNOWN_QOS = frozenset({QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM})

PRIORITY_PROD = "koord-prod"
PRIORITY_MID = "koord-mid"
PRIORITY_BATCH = "koord-batch"
PRIORITY_FREE = "koord-free"
PRIORITY_NONE = ""

#: (class, lowest, highest, default value) for each band of `spec.priority`.
PRIORITY_BANDS: tuple[tuple[str, int, int, int], ...] = (
    (PRIORITY_PROD, 9000, 9999, 9500),
    (PRIORITY_MID, 7000, 7999, 7500),
    (PRIORITY_BATCH, 5000, 5999, 5500),
    (PRIORITY_FREE, 3000, 3999, 3500),
)
KNOWN_PRIORITY_CLASSES = frozenset(band[0] for band in PRIORITY_BANDS)
DEFAULT_PRIORITY_VALUE = {band[0]: band[3] for band in PRIORITY_BANDS}

_TRANSLATION = {
    PRIORITY_BATCH: {CPU: BATCH_CPU, MEMORY: BATCH_MEMORY},
    PRIORITY_MID: {CPU: MID_CPU, MEMORY: MID_MEMORY},
}

# Kubernetes QoS classes (status.qosClass)
K8S_GUARANTEED, K8S_BURSTABLE, K8S_BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def priority_class_raw(pod: Mapping[str, Any]) -> str:
    """Rule 1: the explicit label wins, then the numeric band of `spec.priority`."""
    labels = _labels(pod)
    if LABEL_PRIORITY_CLASS in labels:
        value = labels[LABEL_PRIORITY_CLASS]
        return value if value in KNOWN_PRIORITY_CLASSES else PRIORITY_NONE
    priority = (pod.get("spec") or {}).get("priority")
    if priority is None:
        return PRIORITY_NONE
    return priority_class_of_value(int(priority))


def priority_class_of_value(priority: int) -> str:
    for name, low, high, _ in PRIORITY_BANDS:
        if low <= priority <= high:
            return name
    return PRIORITY_NONE


def qos_class_raw(pod: Mapping[str, Any]) -> str:
    value = _labels(pod).get(LABEL_QOS_CLASS, "")
    return value if value in KNOWN_QOS else QOS_NONE


def qos_class_with_default(pod: Mapping[str, Any], kube_qos: str) -> str:
    """Rule 3: the koordinator label, else mapped from the Kubernetes QoS class."""
    raw = qos_class_raw(pod)
    if raw:
        return raw
    return {K8S_GUARANTEED: QOS_LSR, K8S_BURSTABLE: QOS_LS, K8S_BEST_EFFORT: QOS_BE}.get(kube_qos, "")


def priority_class_with_default(pod: Mapping[str, Any], qos_with_default: str) -> str:
    """Rule 4. NOTE: an empty pod is BestEffort, hence BE, hence koord-batch."""
    raw = priority_class_raw(pod)
    if raw:
        return raw
    if qos_with_default in (QOS_SYSTEM, QOS_LSE, QOS_LSR, QOS_LS):
        return PRIORITY_PROD
    if qos_with_default == QOS_BE:
        return PRIORITY_BATCH
    return PRIORITY_NONE


def translate_resource_name(priority_class: str, resource: str) -> str:
    """Rule 5: prod and none keep the name; otherwise only cpu/memory of batch and mid have a
    mapping, and every other (class, name) pair yields "" (nothing is found under it)."""
    if priority_class in (PRIORITY_PROD, PRIORITY_NONE):
        return resource
    return _TRANSLATION.get(priority_class, {}).get(resource, "")


def sub_priority(pod: Mapping[str, Any]) -> int:
    """The `koordinator.sh/priority` label; absent or unparsable counts as 0."""
    try:
        return int(_labels(pod).get(LABEL_SUB_PRIORITY, 0))
    except (TypeError, ValueError):
        return 0

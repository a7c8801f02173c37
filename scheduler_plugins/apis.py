"""Label keys, annotation keys, resource names and priority/QoS vocabulary (spec §1).

Every key the scheduler side reads lives here, so a typo becomes a single wrong constant rather
than a silently unmatched string. The derivation functions reproduce Koordinator's
`apis/extension` rules exactly; every plugin depends on them.
"""
from __future__ import annotations

from typing import Any, Mapping

# The Koordinator vocabulary shared with the webhook lives in `policies.constants` (one module for
# every key, class and resource name); this module re-exports what the scheduler reads, under the
# scheduler's names, and adds the scheduler-only keys.
from policies import constants as _koord
from policies import qos as _qos

# --- labels and annotations ---------------------------------------------------------------------
LABEL_QOS_CLASS = _koord.LABEL_QOS_CLASS
LABEL_PRIORITY_CLASS = _koord.LABEL_PRIORITY_CLASS
LABEL_SUB_PRIORITY = _koord.LABEL_KOORDINATOR_PRIORITY
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
CPU = _koord.RESOURCE_CPU
MEMORY = _koord.RESOURCE_MEMORY
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
BATCH_CPU = _koord.BATCH_CPU
BATCH_MEMORY = _koord.BATCH_MEMORY
MID_CPU = _koord.MID_CPU
MID_MEMORY = _koord.MID_MEMORY

# --- QoS classes and priority classes -----------------------------------------------------------
QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM, QOS_NONE = (
    _koord.QoSClass.LSE.value, _koord.QoSClass.LSR.value, _koord.QoSClass.LS.value,
    _koord.QoSClass.BE.value, _koord.QoSClass.SYSTEM.value, _koord.QoSClass.NONE.value)
KNOWN_QOS = _koord.KNOWN_QOS_CLASSES

PRIORITY_PROD = _koord.PriorityClass.PROD.value
PRIORITY_MID = _koord.PriorityClass.MID.value
PRIORITY_BATCH = _koord.PriorityClass.BATCH.value
PRIORITY_FREE = _koord.PriorityClass.FREE.value
PRIORITY_NONE = _koord.PriorityClass.NONE.value

#: (class, lowest, highest, default value) for each band of `spec.priority`.
PRIORITY_BANDS: tuple[tuple[str, int, int, int], ...] = tuple(
    (cls.value, low, high, _koord.PRIORITY_DEFAULT_VALUES[cls]) for cls, (low, high) in _koord.PRIORITY_BANDS.items()
)
KNOWN_PRIORITY_CLASSES = _koord.KNOWN_PRIORITY_CLASSES
DEFAULT_PRIORITY_VALUE = {band[0]: band[3] for band in PRIORITY_BANDS}

_TRANSLATION = {cls.value: names for cls, names in _koord.EXTENDED_RESOURCE_NAMES.items()}

# Kubernetes QoS classes (status.qosClass)
K8S_GUARANTEED, K8S_BURSTABLE, K8S_BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"


def priority_class_raw(pod: Mapping[str, Any]) -> str:
    """Rule 1: the explicit label wins, then the numeric band of `spec.priority`."""
    return _qos.raw_priority_class(pod).value


def priority_class_of_value(priority: int) -> str:
    return _qos.priority_class_of_value(priority).value


def qos_class_raw(pod: Mapping[str, Any]) -> str:
    return _qos.raw_qos_class(pod).value


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
    return _qos.sub_priority(pod)

"""Which pods may be evicted at all: Kubernetes' DefaultEvictor semantics (sigs.k8s.io/descheduler's
`pkg/framework/plugins/defaultevictor`), shared by the `DefaultEvictor` and `MigrationController`
filters.

Not evictable: DaemonSet pods, mirror and static pods, terminating pods, pods without an owner
(unless `evictFailedBarePods` and the pod failed), pods with local storage (emptyDir/hostPath)
unless `evictLocalStoragePods`, system-critical pods unless `evictSystemCriticalPods`, pods at or
above `priorityThreshold`, pods with PVCs under `ignorePvcPods`, pods the `labelSelector` does not
select. The annotation `descheduler.alpha.kubernetes.io/evict` (or the label
`koordinator.sh/eviction-enabled: "true"`) opts a pod in regardless.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_CONFIG_SOURCE,
    ANNOTATION_DESCHEDULER_EVICT,
    ANNOTATION_MIRROR_POD,
    LABEL_EVICTION_ENABLED,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_CRITICAL_PRIORITY_CLASSES,
)
from policies.apis.field_errors import ConfigError, Fields
from policies.apis.objects import annotations_of, labels_of, metadata_of, spec_of, status_of
from policies.apis.selectors import LabelSelector
from scheduler_plugins.descheduler.framework.config import selector

FILTER_FIELDS: Final = frozenset(
    {
        "evictLocalStoragePods",
        "evictSystemCriticalPods",
        "ignorePvcPods",
        "evictFailedBarePods",
        "labelSelector",
        "priorityThreshold",
        "nodeFit",
    }
)


@dataclass(frozen=True)
class EvictableArgs:
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    evict_failed_bare_pods: bool = False
    #: MigrationController's `evictAllBarePods`: a pod without owners may be evicted too
    evict_all_bare_pods: bool = False
    label_selector: LabelSelector | None = None
    priority_threshold: int | None = None


def parse_evictable(fields: Fields) -> EvictableArgs:
    threshold = fields.sub("priorityThreshold")
    if threshold.has("name"):
        raise ConfigError(threshold.at("name"), "not supported: give priorityThreshold.value")
    return EvictableArgs(
        evict_local_storage_pods=fields.bool("evictLocalStoragePods", False),
        evict_system_critical_pods=fields.bool("evictSystemCriticalPods", False),
        ignore_pvc_pods=fields.bool("ignorePvcPods", False),
        evict_failed_bare_pods=fields.bool("evictFailedBarePods", False),
        label_selector=selector(fields, "labelSelector"),
        priority_threshold=threshold.int("value", None),
    )


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in spec_of(pod).get("volumes") or [] if isinstance(v, Mapping)]


def pod_priority(pod: Mapping[str, Any]) -> int:
    value = spec_of(pod).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def is_system_critical(pod: Mapping[str, Any]) -> bool:
    return (
        pod_priority(pod) >= SYSTEM_CRITICAL_PRIORITY
        or spec_of(pod).get("priorityClassName") in SYSTEM_CRITICAL_PRIORITY_CLASSES
    )


#: the eviction cost that makes a pod unmigratable (`math.MaxInt32`, Koordinator's
#: `FilterPodWithMaxEvictionCost` in `pkg/descheduler/controllers/migration/util/util.go`)
MAX_EVICTION_COST: Final = 2**31 - 1


def cost_annotation(pod: Mapping[str, Any], key: str) -> int:
    """An int32 cost annotation (`controller.kubernetes.io/pod-deletion-cost`,
    `scheduling.koordinator.sh/eviction-cost`) as Kubernetes' `GetDeletionCostFromPodAnnotations` and
    Koordinator's `GetEvictionCost` read it: a decimal int32 without a plus sign or leading zeros,
    anything else 0."""
    value = annotations_of(pod).get(key)
    if not isinstance(value, str) or not value:
        return 0
    first = value[0]
    if not (first == "-" or value == "0" or "1" <= first <= "9"):
        return 0
    digits = value[1:] if first == "-" else value
    if not digits.isascii() or not digits.isdigit():
        return 0
    cost = int(value)
    return cost if -(2**31) <= cost <= MAX_EVICTION_COST else 0


def why_not_evictable(pod: Mapping[str, Any], args: EvictableArgs) -> str | None:
    """None when the pod may be evicted, else the first reason it may not."""
    annotations, labels = annotations_of(pod), labels_of(pod)
    if ANNOTATION_DESCHEDULER_EVICT in annotations or labels.get(LABEL_EVICTION_ENABLED) == "true":
        return None
    owners = metadata_of(pod).get("ownerReferences") or []
    if any(isinstance(o, Mapping) and o.get("kind") == "DaemonSet" for o in owners):
        return "pod is a DaemonSet pod"
    if ANNOTATION_MIRROR_POD in annotations:
        return "pod is a mirror pod"
    if annotations.get(ANNOTATION_CONFIG_SOURCE) in ("file", "http"):
        return "pod is a static pod"
    if metadata_of(pod).get("deletionTimestamp"):
        return "pod is terminating"
    failed = status_of(pod).get("phase") == "Failed"
    if not owners and not args.evict_all_bare_pods and not (args.evict_failed_bare_pods and failed):
        return "pod does not have any ownerRefs"
    if not args.evict_system_critical_pods:
        if is_system_critical(pod):
            return "pod has system critical priority"
        if args.priority_threshold is not None and pod_priority(pod) >= args.priority_threshold:
            return "pod has higher priority than specified priority class threshold"
    if not args.evict_local_storage_pods and any("emptyDir" in v or "hostPath" in v for v in _volumes(pod)):
        return "pod has local storage and descheduler is not configured with evictLocalStoragePods"
    if args.ignore_pvc_pods and any("persistentVolumeClaim" in v for v in _volumes(pod)):
        return "pod has a PVC and descheduler is configured to ignore PVC pods"
    if args.label_selector is not None and not args.label_selector.matches(labels):
        return "pod labels do not match the labelSelector filter in the policy parameter"
    return None

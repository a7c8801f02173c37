"""Orders on an overloaded pool (spec §3.4): nodes by weighted usage (busiest first), and the
pods of one node as the descheduler's pod sorter does — the cheapest to lose first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.constants import ANNOTATION_EVICTION_COST, ANNOTATION_POD_DELETION_COST, KubernetesQoSClass, QoSClass
from policies.constants import PriorityClass as PC
from policies.objects import annotations_of, metadata_of
from policies.qos import defaulted_priority_class, defaulted_qos_class, kubernetes_qos_class
from policies.timestamps import parse_time
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.plugins.evictable import pod_priority

Object = Mapping[str, Any]

_PRIORITY_CLASS_ORDER: Final = {PC.FREE: 0, PC.BATCH: 1, PC.MID: 2, PC.PROD: 3, PC.NONE: 4}
_KUBE_QOS_ORDER: Final[dict[str, int]] = {
    KubernetesQoSClass.BEST_EFFORT: 0,
    KubernetesQoSClass.BURSTABLE: 1,
    KubernetesQoSClass.GUARANTEED: 2,
}
_QOS_ORDER: Final = {
    QoSClass.BE: 0,
    QoSClass.NONE: 1,
    QoSClass.LS: 1,
    QoSClass.LSR: 2,
    QoSClass.LSE: 3,
    QoSClass.SYSTEM: 4,
}


def usage_score(usage: Mapping[str, int], capacity: Mapping[str, int], weights: Mapping[str, int]) -> float:
    """ResourceUsageScorer: Σ w·usage·1000/capacity / Σ w (higher = busier)."""
    total_weight = sum(weights.values())
    if total_weight <= 0:
        return 0.0
    score = 0.0
    for resource, weight in weights.items():
        capacity_r = capacity.get(resource, 0)
        if weight and capacity_r:
            score += weight * usage.get(resource, 0) * 1000 / capacity_r
    return score / total_weight


def _cost(pod: Object, key: str) -> float:
    try:
        return float(annotations_of(pod).get(key, 0))
    except ValueError:
        return 0.0


def sort_pods(
    pods: Sequence[Object],
    pod_usage: Mapping[str, Mapping[str, int]],
    capacity: Mapping[str, int],
    weights: Mapping[str, int],
) -> list[Object]:
    """Koordinator priority class, priority, Kubernetes QoS, Koordinator QoS, deletion cost and
    eviction cost ascending; then usage of the weighted resources descending; newest first."""

    def key(pod: Object) -> tuple[Any, ...]:
        kube_qos = kubernetes_qos_class(pod)
        qos = defaulted_qos_class(pod, kube_qos)
        created = parse_time(metadata_of(pod).get("creationTimestamp")) or 0.0
        return (
            _PRIORITY_CLASS_ORDER.get(defaulted_priority_class(pod, qos), 4),
            pod_priority(pod),
            _KUBE_QOS_ORDER.get(kube_qos, 1),
            _QOS_ORDER.get(qos, 1),
            _cost(pod, ANNOTATION_POD_DELETION_COST),
            _cost(pod, ANNOTATION_EVICTION_COST),
            -usage_score(pod_usage.get(pod_key(pod), {}), capacity, weights),
            -created,
        )

    return sorted(pods, key=key)

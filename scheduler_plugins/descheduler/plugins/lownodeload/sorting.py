"""Orders on an overloaded pool: nodes by weighted usage (busiest first), and the pods of one node
as Koordinator's pod sorter does (`pkg/descheduler/utils/sorter/pod.go`) — the cheapest to lose
first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.apis.constants import ANNOTATION_EVICTION_COST, ANNOTATION_POD_DELETION_COST, KubernetesQoSClass, QoSClass
from policies.apis.constants import PriorityClass as PC
from policies.apis.objects import metadata_of
from policies.apis.qos import defaulted_priority_class, defaulted_qos_class, kubernetes_qos_class
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.plugins.evictable import cost_annotation, pod_priority

Object = Mapping[str, Any]

_PRIORITY_CLASS_ORDER: Final = {PC.FREE: 0, PC.BATCH: 1, PC.MID: 2, PC.PROD: 3, PC.NONE: 4}
_KUBE_QOS_ORDER: Final[dict[str, int]] = {
    KubernetesQoSClass.BEST_EFFORT: 0,
    KubernetesQoSClass.BURSTABLE: 1,
    KubernetesQoSClass.GUARANTEED: 2,
}
_QOS_ORDER: Final = {
    QoSClass.BE: 1,
    QoSClass.LS: 2,
    QoSClass.LSR: 3,
    QoSClass.LSE: 4,
    QoSClass.SYSTEM: 4,
    QoSClass.NONE: 5,
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


def _most_requested(used: int, capacity: int) -> float:
    """mostRequestedScorePod: the share of `capacity` (the excess over the threshold) a pod's
    usage covers; a pod covering all of it scores above 1, the closer to the excess the higher."""
    if capacity == 0:
        return 0.0
    ratio = used / capacity
    return 1 / ratio + 1 if ratio >= 1 else ratio


def pod_usage_score(usage: Mapping[str, int], exceed: Mapping[str, int], weights: Mapping[str, int]) -> float:
    """ResourceUsageScorerPod over the resources the pod reports, against what the node exceeds
    its high thresholds by."""
    score = 0.0
    weight_sum = 0
    for resource, used in usage.items():
        weight = weights.get(resource, 0)
        score += _most_requested(used, exceed.get(resource, 0)) * weight
        weight_sum += weight
    return score / weight_sum if weight_sum else 0.0


def sort_pods(
    pods: Sequence[Object],
    pod_usage: Mapping[str, Mapping[str, int]],
    exceed: Mapping[str, int],
    weights: Mapping[str, int],
) -> list[Object]:
    """PodSorter(Reverse(PodUsage)): Koordinator priority class, priority, Kubernetes QoS,
    Koordinator QoS, deletion cost and eviction cost ascending; then pods the NodeMetric lists
    before those it does not, the higher usage score first; newest first. `exceed` is what the
    node's usage exceeds its high thresholds by, `weights` the pool's weights of those resources."""

    def key(pod: Object) -> tuple[Any, ...]:
        kube_qos = kubernetes_qos_class(pod)
        qos = defaulted_qos_class(pod, kube_qos)
        created = parse_time(metadata_of(pod).get("creationTimestamp")) or 0.0
        usage = pod_usage.get(pod_key(pod))
        return (
            _PRIORITY_CLASS_ORDER.get(defaulted_priority_class(pod, qos), 4),
            pod_priority(pod),
            _KUBE_QOS_ORDER.get(kube_qos, 1),
            _QOS_ORDER.get(qos, 5),
            cost_annotation(pod, ANNOTATION_POD_DELETION_COST),
            cost_annotation(pod, ANNOTATION_EVICTION_COST),
            usage is None,
            -pod_usage_score(usage or {}, exceed, weights),
            -created,
        )

    return sorted(pods, key=key)

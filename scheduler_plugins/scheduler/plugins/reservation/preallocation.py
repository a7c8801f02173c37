"""Reservation pre-allocation (Koordinator's `pkg/scheduler/plugins/reservation`: `listPreAllocatableCandidates`,
`checkPreAllocatableMatched` in transformer.go, `filterWithPreAllocatablePod` in plugin.go,
`NominatePreAllocation` in nominator.go; tests `TestBeforePreFilterForReservationPreAllocation`,
`Test_filterWithPreAllocatablePods`, `TestPreAllocation`).

A Reservation with `spec.preAllocation: true` (its reserve pod annotated
`scheduling.koordinator.sh/is-pre-allocation: "true"`) may be placed on a node by taking over a
running pod that matches it: that pod is marked as allocated from the reservation
(`reservation-allocated`), so the reservation holds only `allocatable − pod` beside it and the node
counts the reservation's size once. Only the `Restricted` policy supports it, and only the
`Default` mode (`preAllocationPolicy.enableMultiple` is read as false). Candidates are bound
pods matched by an owner with a `labelSelector` (Default mode), not reserve pods, not allocated
from a reservation already, whose own reservation affinity and exact-match keys accept the
reservation. One pod is pre-allocated per reservation (not the multiple-pods or Cluster modes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.apis.constants import ANNOTATION_RESERVATION_ALLOCATED, LABEL_PRE_ALLOCATION_REQUIRED
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error, unschedulable
from scheduler_plugins.scheduler.plugins.reservation import matching
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import POLICY_RESTRICTED, ReservationInfo, is_reserve_pod

REASON_REQUIRED: Final = "node(s) no pod match reservation with pre allocation required"
REASON_UNSUPPORTED: Final = "node(s) reservation pre allocation is unsupported with current attributes"
REASON_NO_PODS: Final = "node(s) no pod(s) to meet the pre-allocation requirements"
#: `spec.preAllocationPolicy.mode: Cluster` needs the plugin's `preAllocationConfig.enableClusterMode`,
#: which colocate does not offer: refused as Koordinator refuses it when disabled
REASON_CLUSTER_MODE: Final = "reservation requires cluster mode pre-allocation which is disabled"


def unsupported(info: ReservationInfo) -> str:
    """Why the reservation cannot pre-allocate at all, or "" (transformer.go's checks)."""
    if info.allocate_policy != POLICY_RESTRICTED:  # only a Restricted reservation pre-allocates
        return REASON_UNSUPPORTED
    policy = info.spec.get("preAllocationPolicy")
    if isinstance(policy, Mapping) and policy.get("mode") == "Cluster":
        return REASON_CLUSTER_MODE
    return ""


def is_required(reserve_pod: PodInfo) -> bool:
    """`scheduling.koordinator.sh/pre-allocation-required: "true"` on the Reservation (its reserve pod)."""
    return reserve_pod.labels.get(LABEL_PRE_ALLOCATION_REQUIRED) == "true"


def candidates(info: ReservationInfo, nodes: Mapping[str, NodeInfo]) -> dict[str, list[PodInfo]]:
    """The pods each node could pre-allocate to the reservation, by node name, sorted by key."""
    terms = info.owner_terms or ()
    if not any(term.selector is not None for term in terms):
        return {}
    out: dict[str, list[PodInfo]] = {}
    for node_name, node in sorted(nodes.items()):
        for _, pod in sorted(node.pods.items()):
            if is_reserve_pod(pod) or pod.annotations.get(ANNOTATION_RESERVATION_ALLOCATED):
                continue
            if not any(term.selector is not None and term.matches(pod) for term in terms):
                continue
            if matching.matches(pod, info, matching.affinity_of(pod), node.labels):
                out.setdefault(node_name, []).append(pod)
    for pods in out.values():  # best first: what nomination prefers (and the CPU/GPU plugins try first)
        pods.sort(key=lambda p: (-matching.score(p, info, {}), p.key))
    return out


def shortage(
    reserve_pod: PodInfo, info: ReservationInfo, node: NodeInfo, candidate: PodInfo
) -> tuple[list[str], list[str]]:
    """Why the reservation cannot take `candidate` over on `node` (the cluster's NodeInfo): the
    node's resources short once the candidate's are given back, and the candidate's requests the
    Restricted reservation cannot hold (fitsNodeAndReservation with the candidate as the owner)."""
    by_node = matching.node_shortage(reserve_pod, node, candidate.qos_requests, 1)
    by_reservation = matching.reservation_shortage(candidate, info, {}, 0, False)
    return by_node, by_reservation


def shares_resources(candidate: PodInfo, info: ReservationInfo) -> bool:
    return matching.shares_resources(candidate, info)


def filter_node(
    reserve_pod: PodInfo, info: ReservationInfo, node: NodeInfo, pods: Sequence[PodInfo], required: bool
) -> tuple[list[PodInfo], Status]:
    """filterWithPreAllocatablePod: the candidates that fit (all of them once one does, as
    Koordinator keeps them for nomination) and the verdict. Without `required`, a node where no
    candidate fits may still take the reservation on its own."""
    by_node: set[str] = set()
    by_reservation: list[str] = []
    for candidate in pods:
        if not shares_resources(candidate, info):
            continue
        node_short, own_short = shortage(reserve_pod, info, node, candidate)
        by_node.update(node_short)
        by_reservation.extend(own_short)
        if not node_short and not own_short:
            return list(pods), SUCCESS
    node_reasons = [f"Insufficient {name} by node" for name in sorted(by_node)]
    if required:
        return [], unschedulable(*(node_reasons + by_reservation or [REASON_NO_PODS]))
    if not node_reasons and pods:
        node_reasons = [f"Insufficient {name} by node" for name in matching.node_shortage(reserve_pod, node, {}, 0)]
    return [], unschedulable(*node_reasons) if node_reasons else SUCCESS


def mark(handle: Handle, info: ReservationInfo | None, target: PodInfo) -> Status:
    """PreBindReservation: the pre-allocated pod is marked as allocated from the reservation."""
    if info is None or not info.pre_allocation:
        return error(REASON_UNSUPPORTED)
    annotations = dict(target.annotations)
    annotations[ANNOTATION_RESERVATION_ALLOCATED] = json.dumps(
        {"name": info.name, "uid": info.uid}, separators=(",", ":")
    )
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/annotations", "value": annotations}]
    try:
        handle.client.patch("Pod", target.namespace, target.name, ops)
    except ClientError as exc:
        return error(f"failed to pre-allocate pod {target.key}: {exc}")
    return SUCCESS


def unmark(handle: Handle, target: PodInfo) -> None:
    """Undo `mark` (Unreserve after PreBind): best effort, as Koordinator's unreservePod."""
    path = "/metadata/annotations/" + ANNOTATION_RESERVATION_ALLOCATED.replace("~", "~0").replace("/", "~1")
    try:
        handle.client.patch("Pod", target.namespace, target.name, [{"op": "remove", "path": path}])
    except ClientError:
        return


def nominate(reserve_pod: PodInfo, info: ReservationInfo, node: NodeInfo, pods: Sequence[PodInfo]) -> PodInfo | None:
    """NominatePreAllocation: of the candidates that fit on their own, the one the reservation
    scores highest (MostAllocated of its requests over the reservation), ties by key: the first
    of `pods`, which `candidates` sorted so."""
    for p in pods:
        if shares_resources(p, info) and not any(shortage(reserve_pod, info, node, p)):
            return p
    return None

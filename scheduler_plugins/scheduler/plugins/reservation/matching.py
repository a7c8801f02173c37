"""Which reservations a pod may use, and whether it fits them (Koordinator's
`pkg/scheduler/plugins/reservation`): the pod-side keys, the classification and the fit.

Pure: a pod, a reservation, its node's labels and the reservation's remaining resources in; a
decision out (`matchReservation`, `apis/extension/reservation.go`; tests `TestMatchReservation*`,
`TestExactMatchReservation`). Implemented: `reservation-ignored`, owners, the
`reservation-affinity` annotation (its `name`, `reservationSelector`,
`requiredDuringSchedulingIgnoredDuringExecution.reservationSelectorTerms` and `tolerations`),
`unschedulable` reservations, the reservation's `spec.taints`, `exact-match-reservation`, and
fitsNode/fitsReservation; pre-allocation's candidates are matched here too (`preallocation.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import (
    ANNOTATION_EXACT_MATCH_RESERVATION,
    ANNOTATION_RESERVATION_AFFINITY,
    LABEL_RESERVATION_IGNORED,
    RESOURCE_PODS,
    TAINT_NODE_UNSCHEDULABLE,
)
from policies.apis.placement import SCHEDULING_EFFECTS, term_matches_labels, tolerates
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.plugins.noderesourcesfit import DEFAULT_MAX_PODS
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import POLICY_DEFAULT, REASON_PREFIX, ReservationInfo


@dataclass(frozen=True, slots=True)
class Affinity:
    """The pod's `reservation-affinity`: it must use a reservation, optionally a named one, one
    whose labels (over its node's) match the selector and any of the selector terms, tolerating
    what the pod's affinity tolerates."""

    name: str = ""
    selector: tuple[tuple[str, str], ...] = ()
    terms: tuple[Mapping[str, Any], ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()

    def matches(self, info: ReservationInfo, node_labels: Mapping[str, str]) -> bool:
        if self.name and self.name != info.name:
            return False
        labels = {**node_labels, **info.labels}
        if not all(labels.get(k) == v for k, v in self.selector):
            return False
        return not self.terms or any(term_matches_labels(t, labels, info.name) for t in self.terms)

    def tolerates(self, taint: Mapping[str, Any]) -> bool:
        return any(tolerates(t, taint) for t in self.tolerations)


def affinity_of(pod: PodInfo) -> Affinity | None:
    """The parsed annotation; a malformed one still requires a reservation (it matches nothing named)."""
    raw = pod.annotations.get(ANNOTATION_RESERVATION_AFFINITY)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return Affinity(name="\x00invalid")
    if not isinstance(value, dict):
        return Affinity(name="\x00invalid")
    selector = value.get("reservationSelector") or {}
    pairs = tuple(sorted((str(k), str(v)) for k, v in selector.items())) if isinstance(selector, dict) else ()
    required = value.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("reservationSelectorTerms") if isinstance(required, dict) else None
    tolerations = value.get("tolerations")
    return Affinity(
        name=str(value.get("name") or ""),
        selector=pairs,
        terms=tuple(t for t in terms or () if isinstance(t, dict)) if isinstance(terms, list) else (),
        tolerations=tuple(t for t in tolerations or () if isinstance(t, dict)) if isinstance(tolerations, list) else (),
    )


def exact_match_resources(pod: PodInfo) -> tuple[str, ...] | None:
    """The `exact-match-reservation` annotation's `resourceNames`, None when unset (a malformed
    value asks for nothing a reservation can meet: `("\x00invalid",)`)."""
    raw = pod.annotations.get(ANNOTATION_EXACT_MATCH_RESERVATION)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return ("\x00invalid",)
    names = value.get("resourceNames") if isinstance(value, dict) else None
    if not isinstance(names, list):
        return ("\x00invalid",)
    return tuple(str(n) for n in names)


def exact_match(pod: PodInfo, info: ReservationInfo) -> bool:
    """`ExactMatchReservation`: for every named resource the pod requests exactly what the
    reservation holds (neither having it counts as equal)."""
    names = exact_match_resources(pod)
    if names is None:
        return True
    if "\x00invalid" in names:
        return False
    return all(pod.requests.get(n, 0) == info.allocatable.get(n, 0) for n in names)


def untolerated_reservation_taint(info: ReservationInfo, affinity: Affinity | None) -> bool:
    """An unschedulable reservation acts as tainted `node.kubernetes.io/unschedulable:NoSchedule`;
    its `spec.taints` with effect NoSchedule or NoExecute apply as they are. Only the tolerations
    of the pod's reservation affinity count."""
    taints: list[Mapping[str, Any]] = [t for t in info.spec.get("taints") or () if isinstance(t, dict)]
    if info.unschedulable:
        taints.insert(0, {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"})
    for taint in taints:
        if taint.get("effect") in SCHEDULING_EFFECTS and (affinity is None or not affinity.tolerates(taint)):
            return True
    return False


def is_ignored(pod: PodInfo) -> bool:
    return pod.labels.get(LABEL_RESERVATION_IGNORED) == "true"


def matches(pod: PodInfo, info: ReservationInfo, affinity: Affinity | None, node_labels: Mapping[str, str]) -> bool:
    """For one reservation the pod is not ignoring: owners; a named reservation matches by name
    (and the exact match); otherwise its taints (unschedulable included) must be tolerated, the
    affinity's selector and terms must match, and the exact match must hold."""
    if not info.matches_owner(pod):
        return False
    if affinity is not None and affinity.name:
        return affinity.name == info.name and exact_match(pod, info)
    if untolerated_reservation_taint(info, affinity):
        return False
    if affinity is not None and not affinity.matches(info, node_labels):
        return False
    return exact_match(pod, info)


def available(info: ReservationInfo, remaining: Vector) -> Vector:
    """GetAvailable: what the reservation still holds for its owners, its reserved part excluded."""
    return {name: max(0, amount - info.reserved.get(name, 0)) for name, amount in remaining.items()}


def node_shortage(pod: PodInfo, node: NodeInfo, remaining: Vector, matched: int, freed_pods: int = 0) -> list[str]:
    """fitsNode (Koordinator's `pkg/scheduler/plugins/reservation/plugin.go`): the resources the
    node cannot give the pod even with `remaining` (what one matched reservation still holds, and
    what a preemption's trial freed) given back; `node` is the cluster's node, every reservation
    still holding. The `matched` reservations' placeholders and the `freed_pods` (the trial's
    victims) do not count as pods."""
    short = []
    if len(node.pods) - matched - freed_pods + 1 > node.allocatable.get(RESOURCE_PODS, DEFAULT_MAX_PODS):
        short.append(RESOURCE_PODS)
    requests = pod.qos_requests
    if not any(requests.values()):
        return short
    for name, amount in sorted(requests.items()):
        if amount > node.allocatable.get(name, 0) - node.qos_requested.get(name, 0) + remaining.get(name, 0):
            short.append(name)
    return short


def reservation_shortage(
    pod: PodInfo, info: ReservationInfo, allocated: Vector, pods: int, detailed: bool
) -> list[str]:
    """fitsReservation, for the Restricted policy: why the pod does not fit what the reservation
    has left (its reserved resources and, when it reserves `pods`, its pod count). `detailed` (the
    pod names the reservation) adds the amounts, as Koordinator does."""
    reasons = []
    max_pods = info.allocatable.get(RESOURCE_PODS)
    if max_pods is not None and pods + 1 > max_pods:
        reasons.append(
            f"{REASON_PREFIX}Too many pods, requested: 1, used: {pods}, capacity: {max_pods}"
            if detailed
            else f"{REASON_PREFIX}Too many pods"
        )
    for name, allocatable in sorted(info.allocatable.items()):
        requested = pod.requests.get(name, 0)
        if name == RESOURCE_PODS or not requested:
            continue
        used = max(0, allocated.get(name, 0))
        capacity = allocatable - info.reserved.get(name, 0)  # the reserved part is not the owner's
        if requested <= capacity - used:
            continue
        if not detailed:
            reasons.append(f"{REASON_PREFIX}Insufficient {name}")
        else:  # cpu in millicores, the rest in base units: Koordinator's MilliValue/Value
            reasons.append(
                f"{REASON_PREFIX}Insufficient {name}, requested: {requested}, used: {used}, capacity: {capacity}"
            )
    return reasons


def policy_conflict(own: ReservationInfo, others: list[ReservationInfo]) -> bool:
    """A reservation of the `Default` allocate policy shares no node with reservations of another
    policy (Koordinator's Filter for a reserve pod, over the node's matchable reservations)."""
    mine = own.allocate_policy
    return any(
        (mine == POLICY_DEFAULT or o.allocate_policy == POLICY_DEFAULT) and mine != o.allocate_policy
        for o in others
        if o.name != own.name
    )


def shares_resources(pod: PodInfo, info: ReservationInfo) -> bool:
    return any(info.allocatable.get(name, 0) > 0 for name, amount in pod.requests.items() if amount > 0)


def score(pod: PodInfo, info: ReservationInfo, allocated: Vector) -> int:
    """ScoreReservation: MostAllocated over the reservation's non-zero resources."""
    resources = {name: cap for name, cap in info.allocatable.items() if cap > 0}
    if not resources:
        return 0
    total = 0
    for name, cap in resources.items():
        requested = pod.requests.get(name, 0) + allocated.get(name, 0)
        if requested <= cap:
            total += 100 * requested // cap
    return total // len(resources)

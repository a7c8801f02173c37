"""Which reservations a pod may use (spec §5.2, §5.3): the pod-side keys and the classification.

Pure: a pod, a reservation, its node's labels and the reservation's remaining resources in; a
decision out (Koordinator's `pkg/scheduler/plugins/reservation` `matchReservation`,
`apis/extension/reservation.go`; tests `TestMatchReservation*`, `TestExactMatchReservation`).
Implemented: `reservation-ignored`, owners, the `reservation-affinity` annotation (its `name`,
`reservationSelector`, `requiredDuringSchedulingIgnoredDuringExecution.reservationSelectorTerms`
and `tolerations`), `unschedulable` reservations, the reservation's `spec.taints`,
`exact-match-reservation`, and the allocate policies' reservation fit. Not implemented (recorded in
docs/scheduler.md): pre-allocation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.constants import (
    ANNOTATION_EXACT_MATCH_RESERVATION,
    ANNOTATION_RESERVATION_AFFINITY,
    LABEL_RESERVATION_IGNORED,
    TAINT_NODE_UNSCHEDULABLE,
)
from policies.placement import SCHEDULING_EFFECTS, term_matches_labels, tolerates
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import POLICY_DEFAULT, ReservationInfo


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


def fit_reasons(pod: PodInfo, info: ReservationInfo, remaining: Vector) -> list[str]:
    """Why the pod does not fit the reservation itself (Aligned/Restricted policies), or []. The
    Default policy lets a pod take more than the reservation holds from the node's free capacity."""
    if info.allocate_policy == POLICY_DEFAULT:
        return []
    return [
        f"Reservation(s) Insufficient {name}"
        for name, amount in sorted(pod.requests.items())
        if name in info.allocatable and amount > remaining.get(name, 0)
    ]


def shares_resources(pod: PodInfo, info: ReservationInfo) -> bool:
    return any(info.allocatable.get(name, 0) > 0 for name, amount in pod.requests.items() if amount > 0)


def score(pod: PodInfo, info: ReservationInfo, allocated: Vector) -> int:
    """ScoreReservation (§5.5): MostAllocated over the reservation's non-zero resources."""
    resources = {name: cap for name, cap in info.allocatable.items() if cap > 0}
    if not resources:
        return 0
    total = 0
    for name, cap in resources.items():
        requested = pod.requests.get(name, 0) + allocated.get(name, 0)
        if requested <= cap:
            total += 100 * requested // cap
    return total // len(resources)

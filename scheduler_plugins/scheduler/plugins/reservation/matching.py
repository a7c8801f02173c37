"""Which reservations a pod may use (Koordinator's `reservation/transformer.go`,
`apis/extension/reservation.go`): the pod-side keys and the classification.

Pure: a pod, a reservation, its node's labels and the reservation's remaining resources in; a
decision out. Implemented: `reservation-ignored`, owners, the `reservation-affinity` name and
`reservationSelector`, `unschedulable` reservations, and the allocate policies' reservation fit.
Not implemented (recorded in docs/scheduler.md): affinity tolerations and selector terms, taints
of reservations, `exact-match-reservation`, pre-allocation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from policies.constants import ANNOTATION_RESERVATION_AFFINITY, LABEL_RESERVATION_IGNORED
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import POLICY_DEFAULT, ReservationInfo


@dataclass(frozen=True, slots=True)
class Affinity:
    """The pod's `reservation-affinity`: it must use a reservation, optionally a named one."""

    name: str = ""
    selector: tuple[tuple[str, str], ...] = ()

    def matches(self, info: ReservationInfo, node_labels: Mapping[str, str]) -> bool:
        if self.name and self.name != info.name:
            return False
        labels = {**node_labels, **info.labels}
        return all(labels.get(k) == v for k, v in self.selector)


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
    return Affinity(name=str(value.get("name") or ""), selector=pairs)


def is_ignored(pod: PodInfo) -> bool:
    return pod.labels.get(LABEL_RESERVATION_IGNORED) == "true"


def matches(pod: PodInfo, info: ReservationInfo, affinity: Affinity | None, node_labels: Mapping[str, str]) -> bool:
    """`transformer.go`'s matching for one reservation the pod is not ignoring: owners, then the
    affinity, then schedulability."""
    if not info.matches_owner(pod):
        return False
    if affinity is not None and affinity.name:
        return affinity.name == info.name
    if info.unschedulable:
        return False
    return affinity is None or affinity.matches(info, node_labels)


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
    """ScoreReservation (`reservation/scoring.go`): MostAllocated over the reservation's non-zero
    resources."""
    resources = {name: cap for name, cap in info.allocatable.items() if cap > 0}
    if not resources:
        return 0
    total = 0
    for name, cap in resources.items():
        requested = pod.requests.get(name, 0) + allocated.get(name, 0)
        if requested <= cap:
            total += 100 * requested // cap
    return total // len(resources)

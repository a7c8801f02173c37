"""Reading a Reservation's and a pod's status as the MigrationController does
(`pkg/descheduler/controllers/migration/reservation/reservation.go`: `IsReservationScheduled`,
`GetBoundPod`, ...): its phase, node, conditions and the pod bound to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.apis.objects import status_of


def pod_ready(pod: Mapping[str, Any]) -> bool:
    status = status_of(pod)
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def condition(reservation: Mapping[str, Any], kind: str, reason: str) -> Mapping[str, Any] | None:
    for cond in status_of(reservation).get("conditions") or ():
        if cond.get("type") == kind and cond.get("reason") == reason:
            return dict(cond)
    return None


def phase(reservation: Mapping[str, Any]) -> str:
    return str(status_of(reservation).get("phase") or "")


def node(reservation: Mapping[str, Any]) -> str:
    return str(status_of(reservation).get("nodeName") or "")


def bound_pod(reservation: Mapping[str, Any]) -> Mapping[str, Any] | None:
    owners = status_of(reservation).get("currentOwners") or []
    return dict(owners[0]) if owners else None

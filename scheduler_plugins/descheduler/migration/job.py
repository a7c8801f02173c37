"""PodMigrationJob (`scheduling.koordinator.sh/v1alpha1`, cluster-scoped) as plain dicts: its modes,
phases, conditions and reasons as Koordinator spells them
(`apis/scheduling/v1alpha1/pod_migration_job_types.go`), a new job for a pod
(`migration/evict.go` CreatePodMigrationJob), the Reservation that holds room for the pod's
replacement (`migration/reservation/util.go` CreateOrUpdateReservationOptions), and condition
bookkeeping (`migration/util/util.go` UpdateCondition). Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_EVICT_REASON,
    ANNOTATION_EVICT_TRIGGER,
    ANNOTATION_JOB_CREATED_BY,
    LABEL_RESERVATION_CREATED_BY,
    LABEL_RESERVATION_ORDER,
    POD_MIGRATION_JOB_KIND,
    RESERVATION_GROUP,
    RESERVATION_KIND,
    RESERVATION_VERSION,
)
from policies.apis.objects import metadata_of, name_of, namespace_of, node_name_of, spec_of, status_of
from scheduler_plugins.clock import format_time

API_VERSION: Final = f"{RESERVATION_GROUP}/{RESERVATION_VERSION}"

MODE_RESERVATION_FIRST: Final = "ReservationFirst"
MODE_EVICT_DIRECTLY: Final = "EvictDirectly"
MODES: Final = (MODE_RESERVATION_FIRST, MODE_EVICT_DIRECTLY)

PENDING, RUNNING, SUCCEEDED, FAILED, ABORTED = "Pending", "Running", "Succeeded", "Failed", "Aborted"
ACTIVE_PHASES: Final = frozenset({PENDING, RUNNING})

COND_RESERVATION_CREATED: Final = "ReservationCreated"
COND_RESERVATION_SCHEDULED: Final = "ReservationScheduled"
COND_EVICTION: Final = "Eviction"
COND_POD_BOUND_RESERVATION: Final = "PodBoundReservation"
COND_BOUND_POD_READY: Final = "BoundPodReady"
COND_RESERVATION_BOUND: Final = "ReservationBound"

REASON_TIMEOUT: Final = "Timeout"
REASON_FAILED_CREATE_RESERVATION: Final = "FailedCreateReservation"
REASON_RESERVATION_EXPIRED: Final = "ReservationExpired"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_FORBIDDEN_MIGRATE_POD: Final = "ForbiddenMigratePod"
REASON_MISSING_POD: Final = "MissingPod"
REASON_MISSING_RESERVATION: Final = "MissingReservation"
REASON_EVICTING: Final = "Evicting"
REASON_FAILED_EVICT: Final = "FailedEvict"
REASON_EVICT_COMPLETE: Final = "EvictComplete"
REASON_WAIT_FOR_POD_BIND_RESERVATION: Final = "WaitForPodBindReservation"

#: what labels the Reservations the controller creates (migration/reservation/types.go)
DEFAULT_CREATOR: Final = "koord-descheduler"


def pod_ref(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec_of(job).get("podRef") or {}


def pod_key_of(job: Mapping[str, Any]) -> str:
    ref = pod_ref(job)
    return f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"


def phase_of(job: Mapping[str, Any]) -> str:
    return str(status_of(job).get("phase") or PENDING)


def mode_of(job: Mapping[str, Any], default: str) -> str:
    return str(spec_of(job).get("mode") or default)


def reservation_name(job: Mapping[str, Any]) -> str:
    """The Reservation the job uses: its reservationRef, else the one it would create."""
    ref = (spec_of(job).get("reservationOptions") or {}).get("reservationRef") or {}
    return str(ref.get("name") or "")


def planned_reservation(job: Mapping[str, Any], default_mode: str) -> str | None:
    """The Reservation a job uses or will create (named after the job), None when it evicts directly."""
    if mode_of(job, default_mode) != MODE_RESERVATION_FIRST:
        return reservation_name(job) or None
    return reservation_name(job) or name_of(job)


def is_active(job: Mapping[str, Any]) -> bool:
    return phase_of(job) in ACTIVE_PHASES and not spec_of(job).get("paused")


def new_job(
    name: str,
    pod: Mapping[str, Any],
    *,
    mode: str,
    ttl_seconds: float,
    reason: str,
    trigger: str,
    created_by: str,
    now: float,
    grace_period_seconds: int | None = None,
) -> dict[str, Any]:
    """The job a Balance plugin's eviction becomes (CreatePodMigrationJob)."""
    spec: dict[str, Any] = {
        "podRef": {
            "namespace": namespace_of(pod) or "default",
            "name": name_of(pod),
            "uid": str(metadata_of(pod).get("uid") or ""),
        },
        "mode": mode,
    }
    if ttl_seconds > 0:
        spec["ttl"] = f"{ttl_seconds:g}s"
    if grace_period_seconds is not None:
        spec["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
    return {
        "apiVersion": API_VERSION,
        "kind": POD_MIGRATION_JOB_KIND,
        "metadata": {
            "name": name,
            "creationTimestamp": format_time(now),
            "annotations": {
                ANNOTATION_EVICT_REASON: reason,
                ANNOTATION_EVICT_TRIGGER: trigger,
                ANNOTATION_JOB_CREATED_BY: created_by,
            },
        },
        "spec": spec,
        "status": {"phase": PENDING},
    }


def _controller_ref(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in metadata_of(pod).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def reservation_owners(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Who may take the reservation (GenerateReserveResourceOwners): a pending unschedulable pod
    itself; otherwise any pod of the pod's controller (the replacement its controller creates)."""
    status = status_of(pod)
    if status.get("phase") == "Pending" and any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in status.get("conditions") or ()
    ):
        meta = metadata_of(pod)
        return [
            {
                "object": {
                    "uid": meta.get("uid") or "",
                    "kind": "Pod",
                    "name": name_of(pod),
                    "namespace": namespace_of(pod) or "default",
                }
            }
        ]
    ref = _controller_ref(pod)
    if ref is None:
        return []
    return [{"controller": {**ref, "namespace": namespace_of(pod) or "default"}}]


def reservation_for(job: Mapping[str, Any], pod: Mapping[str, Any], order: int) -> dict[str, Any]:
    """The Reservation that holds room for the pod's replacement (`reservation/util.go`
    `CreateOrUpdateReservationOptions`): the job's `reservationOptions.template` when it gives one,
    each part it leaves out filled from the pod — the pod's own template, its controller as owner,
    the job's name —; then always without a node and never on the pod's node again (a
    `metadata.name NotIn` field requirement), `allocateOnce`, the job's TTL unless the template sets
    `ttl` or `expires`, and a `reservation-order` so the replacement prefers it."""
    options = spec_of(job).get("reservationOptions") or {}
    template = copy.deepcopy(dict(options.get("template") or {}))
    meta = dict(metadata_of(template))
    spec = dict(spec_of(template))
    pod_template = spec.get("template") or {
        "metadata": {
            k: copy.deepcopy(v)
            for k, v in metadata_of(pod).items()
            if k in ("labels", "annotations", "namespace", "name", "ownerReferences")
        },
        "spec": copy.deepcopy(dict(spec_of(pod))),
    }
    template_spec = pod_template.setdefault("spec", {})
    template_spec.pop("nodeName", None)
    node = node_name_of(pod)
    if node:
        affinity = template_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        skip = {"key": "metadata.name", "operator": "NotIn", "values": [node]}
        terms = required.setdefault("nodeSelectorTerms", [])
        for term in terms:
            term.setdefault("matchFields", []).append(dict(skip))
        if not terms:
            terms.append({"matchFields": [skip]})
    spec["template"] = pod_template
    spec["owners"] = spec.get("owners") or reservation_owners(pod)
    spec["allocateOnce"] = True
    ttl = spec_of(job).get("ttl")
    if ttl and not spec.get("ttl") and not spec.get("expires"):
        spec["ttl"] = ttl
    labels = dict(meta.get("labels") or {})
    labels.update({LABEL_RESERVATION_CREATED_BY: DEFAULT_CREATOR, LABEL_RESERVATION_ORDER: str(order)})
    return {
        "apiVersion": API_VERSION,
        "kind": RESERVATION_KIND,
        "metadata": {**meta, "name": meta.get("name") or name_of(job), "labels": labels},
        "spec": spec,
    }


def condition(job: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status_of(job).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


def condition_true(job: Mapping[str, Any], kind: str) -> bool:
    cond = condition(job, kind)
    return cond is not None and cond.get("status") == "True"


def set_condition(job: dict[str, Any], kind: str, status: str, now: float, reason: str = "", message: str = "") -> bool:
    """UpdateCondition, and the job's status/reason/message follow the condition
    (Reconciler.updateCondition). False when nothing changed."""
    st = job.setdefault("status", {})
    conditions = st.setdefault("conditions", [])
    new = {"type": kind, "status": status, "reason": reason, "message": message}
    for i, cond in enumerate(conditions):
        if cond.get("type") == kind:
            if all(cond.get(k, "") == v for k, v in new.items()):
                return False
            stamp = cond.get("lastTransitionTime") if cond.get("status") == status else format_time(now)
            conditions[i] = {**new, "lastProbeTime": format_time(now), "lastTransitionTime": stamp}
            break
    else:
        conditions.append({**new, "lastProbeTime": format_time(now), "lastTransitionTime": format_time(now)})
    st["status"], st["reason"], st["message"] = kind, reason, message
    return True


def finish(job: dict[str, Any], phase: str, reason: str, message: str) -> None:
    st = job.setdefault("status", {})
    st["phase"], st["reason"], st["message"] = phase, reason, message
    if phase == SUCCEEDED:
        st["status"] = "Complete"

"""A Reservation as the scheduler sees it (Koordinator's `pkg/util/reservation/reservation.go`): the
object, its reserve pod, whom it serves.

A Reservation is scheduled as a fake *reserve pod* built from its template; once Available on a
node it holds its resources there. `ReservationInfo` derives, once per object version, what the
cluster state and the Reservation plugin ask on every cycle: the reserved vector (the template's
requests, or `status.allocatable` once scheduled), the owner matcher, the expiry time and the
allocate policy. The object stays a dict; nothing here mutates it.

Owners are in disjunctive normal form: entries are ORed, the fields of one entry ANDed; a missing
`owners` matches nothing and `[{}]` matches every pod. Empty fields of `object`/`controller` are
wildcards.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_PRE_ALLOCATION,
    ANNOTATION_RESERVATION_AFFINITY,
    ANNOTATION_RESERVATION_NAME,
    ANNOTATION_RESERVATION_NODE,
    ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE,
    ANNOTATION_RESERVE_POD,
    LABEL_KOORDINATOR_PRIORITY,
    LABEL_RESERVATION_ORDER,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
)
from policies.apis.durations import parse_duration
from policies.apis.object_view import ObjectView
from policies.apis.objects import metadata_of, spec_of
from policies.apis.quantity import QuantityError, resource_list
from policies.apis.selectors import LabelSelector, SelectorShapeError, compile_selector
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import format_time
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector, clone

MAX_INT32: Final = 2**31 - 1
#: `PodInfo.key` of a reserve pod: never a real pod's `namespace/name`
RESERVE_POD_KEY_PREFIX: Final = "Reservation/"
PHASE_PENDING, PHASE_AVAILABLE, PHASE_SUCCEEDED, PHASE_FAILED, PHASE_WAITING = (
    "Pending",
    "Available",
    "Succeeded",
    "Failed",
    "Waiting",
)
POLICY_DEFAULT, POLICY_ALIGNED, POLICY_RESTRICTED = "", "Aligned", "Restricted"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
#: Koordinator's prefix of a reason about the reservation itself (`reservationutil.NewReservationReason`)
REASON_PREFIX: Final = "Reservation(s) "


class ReservePodInfo(PodInfo):
    """The reserve pod of a Reservation: keyed `Reservation/<name>` so it never collides with a pod."""

    @cached_property
    def key(self) -> str:
        return RESERVE_POD_KEY_PREFIX + str(self.annotations.get(ANNOTATION_RESERVATION_NAME, self.name))


def is_reserve_pod(pod: PodInfo) -> bool:
    return pod.annotations.get(ANNOTATION_RESERVE_POD) == "true"


@dataclass(frozen=True, slots=True)
class _OwnerTerm:
    object: Mapping[str, str] | None
    controller: Mapping[str, Any] | None
    selector: LabelSelector | None

    def matches(self, pod: PodInfo) -> bool:
        if self.object is not None:
            meta = pod.metadata
            wanted = {"uid": meta.get("uid"), "name": meta.get("name"), "namespace": pod.namespace}
            for field, value in self.object.items():
                if field in wanted and value and value != wanted[field]:
                    return False
        if self.controller is not None:
            refs = [r for r in pod.metadata.get("ownerReferences") or [] if r.get("controller")]
            if not refs:
                return False
            ref = refs[0]
            for field in ("apiVersion", "kind", "name", "uid"):
                if self.controller.get(field) and self.controller[field] != ref.get(field):
                    return False
            if self.controller.get("namespace") and self.controller["namespace"] != pod.namespace:
                return False
        return self.selector is None or self.selector.matches(pod.labels)


class ReservationInfo(ObjectView):
    """One Reservation object, read-only; `allocated` pods are tracked by the cluster state."""

    __slots__ = ()

    @property
    def node_name(self) -> str:
        return str(self.status.get("nodeName") or "")

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def is_available(self) -> bool:
        return bool(self.node_name) and self.phase == PHASE_AVAILABLE

    @property
    def is_pending(self) -> bool:
        """Not scheduled yet and not terminal: the simulator schedules its reserve pod."""
        return not self.node_name and self.phase in ("", PHASE_PENDING)

    @cached_property
    def allocate_once(self) -> bool:
        return self.spec.get("allocateOnce", True) is not False  # DEFAULT TRUE when omitted

    @cached_property
    def allocate_policy(self) -> str:
        return str(self.spec.get("allocatePolicy") or POLICY_DEFAULT)

    @cached_property
    def unschedulable(self) -> bool:
        return bool(self.spec.get("unschedulable"))

    @cached_property
    def order(self) -> int:
        """The `reservation-order` label: a positive integer, smaller preferred; 0 when unset."""
        try:
            value = int(self.labels.get(LABEL_RESERVATION_ORDER, "0"))
        except ValueError:
            return 0
        return value if value > 0 else 0

    @cached_property
    def expires_at(self) -> float | None:
        """`spec.expires`, else creation + `spec.ttl`; None when neither is set (or ttl is 0)."""
        expires = parse_time(self.spec.get("expires"))
        if expires is not None:
            return expires
        created = parse_time(self.metadata.get("creationTimestamp"))
        try:
            ttl = parse_duration(self.spec.get("ttl"))
        except ValueError:
            return None
        return created + ttl if created is not None and ttl > 0 else None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    @cached_property
    def allocatable(self) -> Vector:
        """What the reservation holds: `status.allocatable` once scheduled, else the template's requests."""
        try:
            if self.status.get("allocatable"):
                return resource_list(self.status["allocatable"])
        except QuantityError:
            pass
        return dict(self.reserve_pod.requests)

    @cached_property
    def allocatable_when_available(self) -> Vector:
        """What Bind records as `status.allocatable` (`SetReservationAvailable`): the template's
        requests, each resource of the `reservation-resize-allocatable` annotation
        (`{"resources": {...}}`) replacing the template's; a malformed annotation is ignored."""
        resized: Vector = {}
        try:
            text = (self.metadata.get("annotations") or {}).get(ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE)
            resources = json.loads(text).get("resources") if text else None
            resized = resource_list(resources) if isinstance(resources, Mapping) else {}
        except (ValueError, AttributeError, QuantityError):
            resized = {}
        return {**self.reserve_pod.requests, **resized}

    @cached_property
    def pre_allocation(self) -> bool:
        return bool(self.spec.get("preAllocation"))

    @cached_property
    def reserved(self) -> Vector:
        """What the reservation keeps from its owners too (`node.koordinator.sh/reservation`
        `{"resources": {...}}` on the Reservation): Koordinator's ReservationInfo.Reserved."""
        try:
            text = (self.metadata.get("annotations") or {}).get(ANNOTATION_NODE_RESERVATION)
            resources = json.loads(text).get("resources") if text else None
            return resource_list(resources) if isinstance(resources, Mapping) else {}
        except (ValueError, AttributeError, QuantityError):
            return {}

    @cached_property
    def owner_terms(self) -> tuple[_OwnerTerm, ...] | None:
        owners = self.spec.get("owners")
        if owners is None:
            return None
        terms = []
        for i, owner in enumerate(owners if isinstance(owners, list) else []):
            owner = owner if isinstance(owner, Mapping) else {}
            selector = None
            if owner.get("labelSelector") is not None:
                try:
                    compiled = compile_selector(owner["labelSelector"], f"spec.owners[{i}].labelSelector")
                except SelectorShapeError:
                    continue
                if not isinstance(compiled, LabelSelector):
                    continue  # an invalid selector matches nothing
                selector = compiled
            terms.append(_OwnerTerm(owner.get("object"), owner.get("controller"), selector))
        return tuple(terms)

    @cached_property
    def owner_names(self) -> frozenset[str] | None:
        """The pod names the owners can match when every term names one object; None when some
        term could match a pod of any name (a controller, a selector, a wildcard object)."""
        terms = self.owner_terms
        if terms is None:
            return frozenset()
        names = set()
        for term in terms:
            if term.object is None or not term.object.get("name") or term.controller or term.selector:
                return None
            names.add(str(term.object["name"]))
        return frozenset(names)

    def matches_owner(self, pod: PodInfo) -> bool:
        terms = self.owner_terms
        return terms is not None and any(term.matches(pod) for term in terms)

    @cached_property
    def reserve_pod(self) -> ReservePodInfo:
        return ReservePodInfo(reserve_pod_object(self.obj))


def reserve_pod_object(reservation: Mapping[str, Any]) -> dict[str, Any]:
    """The fake pod a Reservation is scheduled as (`NewReservePod` in
    `pkg/util/reservation/reservation.go`): the template's pod with the Reservation's name and UID,
    its labels and annotations over the template's, the reserve-pod annotations, priority from
    `koordinator.sh/priority` else MaxInt32, `reservation-node` taking the template's nodeName
    (which Filter then enforces)."""
    meta = metadata_of(reservation)
    spec = spec_of(reservation)
    template = spec.get("template") or {}
    tmeta = metadata_of(template)
    pod_spec = clone(dict(spec_of(template)))
    labels = {**(tmeta.get("labels") or {}), **(meta.get("labels") or {})}
    annotations = {
        **(tmeta.get("annotations") or {}),
        **(meta.get("annotations") or {}),
        ANNOTATION_RESERVE_POD: "true",
        ANNOTATION_RESERVATION_NAME: str(meta.get("name") or ""),
    }
    if spec.get("preAllocation"):
        annotations[ANNOTATION_PRE_ALLOCATION] = "true"
    if pod_spec.get("nodeName"):
        annotations[ANNOTATION_RESERVATION_NODE] = pod_spec.pop("nodeName")
    try:
        priority = int(labels.get(LABEL_KOORDINATOR_PRIORITY, ""))
    except ValueError:
        priority = MAX_INT32
    pod_spec["priority"] = priority
    pod_spec.setdefault("schedulerName", DEFAULT_SCHEDULER_NAME)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta.get("name") or "",
            "namespace": tmeta.get("namespace") or "default",
            "uid": meta.get("uid") or "",
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": pod_spec,
    }


def held_pod(info: ReservationInfo, remaining: Vector) -> ReservePodInfo:
    """The entry that holds `remaining` of an Available reservation on its node: the reserve pod
    with one container requesting exactly that (explicit zeros, so no non-zero defaults apply)."""
    obj = clone(reserve_pod_object(info.obj))
    requests = quantities(remaining)
    for name in (RESOURCE_CPU, RESOURCE_MEMORY):
        requests.setdefault(name, "0")
    obj["spec"]["containers"] = [{"name": "reserved", "resources": {"requests": requests}}]
    obj["spec"].pop("initContainers", None)
    obj["spec"].pop("overhead", None)
    obj["spec"]["nodeName"] = info.node_name
    return ReservePodInfo(obj)


def available_status(info: ReservationInfo, node_name: str, now: float, owner: PodInfo | None) -> dict[str, Any]:
    """The status Bind gives a reserve pod's Reservation (`SetReservationAvailable`): Available on
    the node, holding the template's requests with the resize annotation applied; a pre-allocated
    pod is its first owner."""
    stamp = format_time(now)
    owners: dict[str, Any] = {}
    if owner is not None:
        uid = str(owner.metadata.get("uid") or "")
        owners = {
            "currentOwners": [{"namespace": owner.namespace, "name": owner.name, "uid": uid}],
            "allocated": quantities(owner.requests),
        }
    return {
        **owners,
        "nodeName": node_name,
        "phase": PHASE_AVAILABLE,
        "allocatable": quantities(info.allocatable_when_available),
        "conditions": [
            {"type": "Scheduled", "status": "True", "reason": "Scheduled", "lastTransitionTime": stamp},
            {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": stamp},
        ],
    }


def quantities(vector: Mapping[str, int]) -> dict[str, str]:
    """Scheduler integers back to quantity strings (millicores for cpu), sorted by name."""
    return {name: (f"{amount}m" if name == RESOURCE_CPU else str(amount)) for name, amount in sorted(vector.items())}


def remaining(allocatable: Mapping[str, int], allocated: Mapping[str, int]) -> Vector:
    """allocatable − allocated per reserved resource, never below zero."""
    return {name: max(0, amount - allocated.get(name, 0)) for name, amount in allocatable.items()}


def matched_on(state_value: object, node_name: str, nominated: str | None = None) -> list[ReservationInfo]:
    """The reservations a pod may consume on `node_name`, from the cycle state's
    `MATCHED_RESERVATIONS` (what the Reservation plugin wrote before PreFilter): the reservations
    NodeNUMAResource, DeviceShare and ElasticQuota restore for the pod (Koordinator's
    RestoreReservation `matched`). With `nominated` (see `nominated_for`) only that one ("": none)."""
    if not isinstance(state_value, Mapping):
        return []
    matched = [r for r in state_value.get(node_name) or () if isinstance(r, ReservationInfo)]
    if nominated is not None:
        return [r for r in matched if r.name == nominated]
    return matched


def nominated_for(reserved: object, nominator: object, node_name: str) -> str | None:
    """At Reserve, the reservation the pod is counted against on the node: the one it reserved
    (`RESERVED_RESERVATION`), else the Reservation plugin's nomination (`RESERVATION_NOMINATOR`;
    "" when it nominates none); None when neither is in the cycle state (any matched one may serve)."""
    if isinstance(reserved, str) and reserved:
        return reserved
    if callable(nominator):
        info = nominator(node_name)
        return info.name if isinstance(info, ReservationInfo) else ""
    return None


def requires_reservation(pod: PodInfo) -> bool:
    """A pod with `reservation-affinity` must be placed through a reservation (requiredFromReservation)."""
    return ANNOTATION_RESERVATION_AFFINITY in pod.annotations

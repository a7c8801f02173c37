"""Reservation (Koordinator's `pkg/scheduler/plugins/reservation`): pods consume the resources
Reservations hold; reserve pods are scheduled.

BeforePreFilter expires due reservations (in the scheduler's view) and, for a normal pod,
classifies the reservations of every node that holds some (matching.py), publishing them in the
cycle state (`MATCHED_RESERVATIONS`) for NodeNUMAResource, DeviceShare and ElasticQuota; for a
pre-allocation reserve pod it lists the running pods it may take over (`preallocation.py`,
`PRE_ALLOCATABLE`). BeforeFilter hands the
Filter plugins a copy of a node with the pod's matched reservations removed, so the capacity they
hold is free *for this pod*; a pod with no match skips it (and keeps the batch Filter path).
PreFilter restricts a pod with `reservation-affinity` to nodes with a match. Filter enforces a
reserve pod's `reservation-node`, the allocate-policy conflict between reservations of a node and
the pre-allocation fit, and filterWithReservations (node plus reservation; Restricted
also within the reservation). PreScore nominates
one reservation per node; Score gives a node with the preferred (smallest `reservation-order`)
reservation 1000 and others their ScoreReservation, then normalises to 0..100. Reserve counts the
pod against the nominated reservation (re-checking `allocateOnce`), Unreserve undoes it, PreBind
writes `reservation-allocated` and the Reservation's status (on the pre-allocated pod, for a reserve
pod), and Bind "binds" a reserve pod by making its Reservation Available on the node (with the
resize annotation applied); a normal pod's Bind is skipped (DefaultBinder).
"""

from __future__ import annotations

import json
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_PRE_ALLOCATION,
    ANNOTATION_RESERVATION_ALLOCATED,
    ANNOTATION_RESERVATION_NAME,
    ANNOTATION_RESERVATION_NODE,
    RESERVATION_KIND,
    RESOURCE_PODS,
)
from scheduler_plugins.scheduler.framework.cycle_state import (
    MATCHED_RESERVATIONS,
    PRE_ALLOCATABLE,
    PREFERRED_NODES,
    RESERVATION_NOMINATOR,
    RESERVED_RESERVATION,
    CycleState,
)
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.interfaces import NodeScore, PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import (
    SKIP,
    SUCCESS,
    Status,
    error,
    unresolvable,
    unschedulable,
)
from scheduler_plugins.scheduler.plugins.reservation import matching, preallocation
from scheduler_plugins.scheduler.plugins.reservation.preemptible import (
    ON_NODE,
    Preemptible,
    freed_in,
    plus,
    preemptible_in,
)
from scheduler_plugins.scheduler.plugins.reservation.vector import ReservationVector
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import (
    POLICY_RESTRICTED,
    ReservationInfo,
    available_status,
    is_reserve_pod,
    quantities,
)

NAME: Final = "Reservation"
MOST_PREFERRED_SCORE: Final = 1000
REASON_AFFINITY: Final = "node(s) no reservations match reservation affinity"
REASON_NODE_NAME: Final = "node(s) didn't match the nodeName specified by reservation"
REASON_NO_RESERVATION_FITS: Final = "node(s) no reservation(s) to meet the requirements"
REASON_ALLOCATE_ONCE: Final = "reservation has allocateOnce enabled and has already been allocated"
REASON_POLICY_CONFLICT: Final = "node(s) reservation allocate policy conflict"
#: the CycleState key of the plugin's per-cycle state, and of the reservation a pod reserved
STATE_KEY: Final = NAME
RESERVED_KEY: Final = NAME + "/reserved"
PRE_ALLOCATED_KEY: Final = NAME + "/pre-allocated"
#: what a preemption's trial freed (the PreFilter extensions' record)
PREEMPTIBLE_KEY: Final = NAME + "/preemptible"


@dataclass
class _Cycle:
    affinity: matching.Affinity | None = None
    matched: dict[str, list[ReservationInfo]] = field(default_factory=dict)
    nominated: dict[str, ReservationInfo] = field(default_factory=dict)
    preferred: str = ""
    #: a pre-allocation reserve pod: its reservation, whether pre-allocation is required, and the
    #: running pods each node could pre-allocate
    pre_allocation: ReservationInfo | None = None
    pre_required: bool = False
    pre_allocatable: dict[str, list[PodInfo]] = field(default_factory=dict)


class Reservation:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.index = handle.cluster.reservations
        #: the optional vector path (numpy), held equal to `filter`
        self.vector = ReservationVector(self)

    # --- BeforePreFilter / PreFilter ---------------------------------------------------------------
    def before_pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PodInfo, bool, Status]:
        self.index.expire(self.handle.clock())
        cycle = _Cycle()
        if is_reserve_pod(pod) and pod.annotations.get(ANNOTATION_PRE_ALLOCATION) == "true":
            info = self.index.infos.get(pod.annotations.get(ANNOTATION_RESERVATION_NAME, ""))
            if info is not None:
                reason = preallocation.unsupported(info)
                if reason:
                    return pod, False, unresolvable(reason)
                cycle.pre_allocation, cycle.pre_required = info, preallocation.is_required(pod)
                cycle.pre_allocatable = preallocation.candidates(info, self.handle.cluster.nodes)
        if not is_reserve_pod(pod) and not matching.is_ignored(pod):
            cycle.affinity = matching.affinity_of(pod)
            nodes = self.handle.cluster.nodes
            for info in self.index.candidates(pod):
                node = nodes.get(info.node_name)
                if (
                    node is not None
                    and self.index.matchable(info)
                    and matching.matches(pod, info, cycle.affinity, node.labels)
                ):
                    cycle.matched.setdefault(node.name, []).append(info)
            cycle.matched = dict(sorted(cycle.matched.items()))
        state.write(STATE_KEY, cycle)
        state.write(MATCHED_RESERVATIONS, {node: tuple(infos) for node, infos in cycle.matched.items()})
        state.write(PRE_ALLOCATABLE, {node: tuple(pods) for node, pods in cycle.pre_allocatable.items()})
        if cycle.matched:
            state.write(RESERVATION_NOMINATOR, lambda node_name: self._nominate(state, cycle, pod, node_name))
        restored = frozenset(cycle.matched) | frozenset(cycle.pre_allocatable)
        state.before_filter_nodes[NAME] = restored  # only these nodes are restored
        if restored:
            state.write(PREFERRED_NODES, tuple(sorted(restored)))
        return pod, False, SUCCESS

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        if is_reserve_pod(pod):
            name = pod.annotations.get(ANNOTATION_RESERVATION_NAME, "")
            if name not in self.index.infos:
                return None, error(f"reservation {name!r} not found")
            cycle = self._cycle(state)
            if cycle.pre_allocation is not None and cycle.pre_required:
                if not cycle.pre_allocatable:
                    return None, unresolvable(preallocation.REASON_REQUIRED)
                return PreFilterResult(frozenset(cycle.pre_allocatable)), SUCCESS
            return None, SUCCESS
        cycle = self._cycle(state)
        if cycle.affinity is not None:
            if not cycle.matched:
                return None, unresolvable(REASON_AFFINITY)
            return PreFilterResult(frozenset(cycle.matched)), SUCCESS
        return (None, SKIP) if not cycle.matched else (None, SUCCESS)

    def _cycle(self, state: CycleState) -> _Cycle:
        cycle = state.read(STATE_KEY)
        return cycle if isinstance(cycle, _Cycle) else _Cycle()

    def filter_scope(self, state: CycleState) -> tuple[Container[str], bool]:
        """The nodes where the pod matched a reservation (`filter` judges them one by one), and
        what `filter` says of every other node: it passes, unless the pod requires a reservation."""
        cycle = self._cycle(state)
        return cycle.matched, cycle.affinity is None

    # --- BeforeFilter / Filter -------------------------------------------------------------------
    def before_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[PodInfo, NodeInfo, bool, Status]:
        cycle = self._cycle(state)
        matched = cycle.matched.get(node.name)
        if matched:
            held = {r.reserve_pod.key for r in matched}
        elif cycle.pre_allocatable.get(node.name):  # restorePreAllocatablePods
            held = {p.key for p in cycle.pre_allocatable[node.name]}
        else:
            return pod, node, False, SUCCESS
        restored = NodeInfo(node.node)
        restored.index = node.index
        for key, other in node.pods.items():
            if key not in held:
                restored.add_pod(other)
        return pod, restored, True, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if is_reserve_pod(pod):
            wanted = pod.annotations.get(ANNOTATION_RESERVATION_NODE)
            if wanted and wanted != node.name:
                return unresolvable(REASON_NODE_NAME)
            if self._policy_conflict(pod, node.name):
                return unresolvable(REASON_POLICY_CONFLICT)
            return self._filter_pre_allocation(state, pod, node)
        cycle = self._cycle(state)
        matched = cycle.matched.get(node.name)
        if not matched:
            return unresolvable(REASON_AFFINITY) if cycle.affinity is not None else SUCCESS
        return self._filter_with_reservations(state, cycle, pod, self._held(node), matched)

    def _filter_pre_allocation(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        cycle = self._cycle(state)
        if cycle.pre_allocation is None:
            return SUCCESS
        pods = cycle.pre_allocatable.get(node.name, [])
        if not pods and not cycle.pre_required:
            return SUCCESS  # NodeResourcesFit judges the node alone
        _, status = preallocation.filter_node(pod, cycle.pre_allocation, self._held(node), pods, cycle.pre_required)
        return status

    def _policy_conflict(self, pod: PodInfo, node_name: str) -> bool:
        own = self.index.infos.get(pod.annotations.get(ANNOTATION_RESERVATION_NAME, ""))
        if own is None:
            return False
        others = (self.index.infos.get(name) for name in self.index.by_node.get(node_name, ()))
        return matching.policy_conflict(own, [o for o in others if o is not None and self.index.matchable(o)])

    def _filter_with_reservations(
        self, state: CycleState, cycle: _Cycle, pod: PodInfo, held: NodeInfo, matched: list[ReservationInfo]
    ) -> Status:
        """filterWithReservations: the pod fits when, for one matched reservation, the node's free
        resources plus what that reservation still holds cover it (every policy), and, for the
        Restricted policy, the reservation's own remainder covers it too. Aligned and Default differ
        only in Reserve, not here."""
        required = cycle.affinity is not None
        named = cycle.affinity.name if cycle.affinity is not None else ""
        by_node: set[str] = set()
        by_reservation: list[str] = []
        freed = freed_in(state, PREEMPTIBLE_KEY) or Preemptible()
        on_node, freed_pods = freed.on_node(held.name), freed.pods(held.name)
        for info in matched:
            if not required and not matching.shares_resources(pod, info):
                continue
            in_reservation = freed.in_reservation(held.name, info.name)
            available = matching.available(info, self.index.remaining(info))
            node_short = matching.node_shortage(
                pod, held, plus(available, on_node, in_reservation), len(matched), freed_pods
            )
            own_short = self._reservation_shortage(pod, info, in_reservation, detailed=named == info.name)
            by_node.update(node_short)
            by_reservation.extend(own_short)
            if not node_short and not own_short:
                return SUCCESS
        node_reasons = [f"Insufficient {name} by node" for name in sorted(by_node)]
        if required:
            return unschedulable(*(node_reasons + by_reservation or [REASON_NO_RESERVATION_FITS]))
        if not node_reasons:  # no reservation helps: the node alone, every reservation held
            node_reasons = [
                f"Insufficient {name} by node"
                for name in matching.node_shortage(pod, held, on_node, len(matched), freed_pods)
            ]
        return unschedulable(*node_reasons) if node_reasons else SUCCESS

    def _reservation_shortage(
        self, pod: PodInfo, info: ReservationInfo, freed: Vector | None = None, detailed: bool = False
    ) -> list[str]:
        """fitsReservation: what the reservation's owners allocated, less what a preemption's
        trial `freed` of it (`preemptibleInRR`)."""
        if info.allocate_policy != POLICY_RESTRICTED:
            return []
        pods = self.index.allocated_pods(info.name)
        allocated = self.index.allocated(info.name)
        if freed:
            pods -= freed.get(RESOURCE_PODS, 0)
            allocated = plus(allocated, {name: -amount for name, amount in freed.items()})
        return matching.reservation_shortage(pod, info, allocated, pods, detailed)

    # --- PreFilter extensions --------------------------------------------------------------------
    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """AddPod: `other` takes its requests again, from the reservation it allocated from or
        from the node (a reprieved victim; a nominated pod, too)."""
        preemptible_in(state, PREEMPTIBLE_KEY).change(node.name, self._reservation_of(other, node.name), other, -1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """RemovePod: `other`'s requests are free in this cycle (a preemption's victim), in the
        reservation it allocated from or on the node."""
        preemptible_in(state, PREEMPTIBLE_KEY).change(node.name, self._reservation_of(other, node.name), other, +1)
        return SUCCESS

    def _reservation_of(self, pod: PodInfo, node_name: str) -> str:
        """GetReservationInfoByPod: the reservation on the node the pod allocated from, or ON_NODE."""
        for name in self.index.by_node.get(node_name, ()):
            if pod.key in self.index.allocations.get(name, {}):
                return name
        return ON_NODE

    def _held(self, restored: NodeInfo) -> NodeInfo:
        """The cluster's own NodeInfo behind the restored copy Filter is given (every reservation
        still holding)."""
        table = self.handle.cluster.by_index
        return table[restored.index] if 0 <= restored.index < len(table) else restored

    # --- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        cycle = self._cycle(state)
        if is_reserve_pod(pod) or not cycle.matched:
            return SKIP
        best_order = 0
        for node in nodes:
            chosen = self._nominate(state, cycle, pod, node.name)
            if chosen is None:
                continue
            cycle.nominated[node.name] = chosen
            if chosen.order and (not best_order or chosen.order < best_order):
                best_order, cycle.preferred = chosen.order, node.name
        return SUCCESS

    def _refused_by_plugins(self, state: CycleState, pod: PodInfo, info: ReservationInfo, node: NodeInfo) -> bool:
        """RunNominateReservationFilterPlugins: a plugin with CPUs or cards of its own
        (NodeNUMAResource, DeviceShare) says the reservation cannot serve the pod on the node."""
        return any(
            not p.filter_nominate_reservation(state, pod, info, node).is_success
            for p in self.handle.nominate_reservation_filters
        )

    def _nominate(self, state: CycleState, cycle: _Cycle, pod: PodInfo, node_name: str) -> ReservationInfo | None:
        """NominateReservation: the fitting matches (the NominateReservationFilterPlugins accept
        them); smallest order, else highest score."""
        if node_name in cycle.nominated:
            return cycle.nominated[node_name]
        node = self.handle.cluster.nodes.get(node_name)
        fitting = [
            r
            for r in cycle.matched.get(node_name, ())
            if self.index.matchable(r)
            and not self._reservation_shortage(pod, r)
            and (node is None or not self._refused_by_plugins(state, pod, r, node))
        ]
        if not fitting:
            return None
        ordered = [r for r in fitting if r.order]
        if ordered:
            return min(ordered, key=lambda r: (r.order, r.name))
        return max(fitting, key=lambda r: (matching.score(pod, r, self.index.allocated(r.name)), r.name))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        cycle = self._cycle(state)
        if node.name == cycle.preferred:
            return MOST_PREFERRED_SCORE, SUCCESS
        chosen = cycle.nominated.get(node.name)
        if chosen is None:
            return 0, SUCCESS
        return matching.score(pod, chosen, self.index.allocated(chosen.name)), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        highest = max((s.score for s in scores), default=0)
        if highest > 0:
            for s in scores:
                s.score = s.score * 100 // highest
        return SUCCESS

    # --- Reserve / Unreserve ---------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if is_reserve_pod(pod):
            return self._reserve_pre_allocation(state, pod, node_name)
        cycle = self._cycle(state)
        chosen = self._nominate(state, cycle, pod, node_name)
        if chosen is None:
            if cycle.affinity is not None:
                return unschedulable(REASON_AFFINITY)
            return SUCCESS
        if chosen.allocate_once and self.index.allocated(chosen.name):
            return unschedulable(REASON_ALLOCATE_ONCE)
        self.index.allocate(chosen.name, pod)
        state.write(RESERVED_KEY, chosen)
        state.write(RESERVED_RESERVATION, chosen.name)
        return SUCCESS

    def _reserve_pre_allocation(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """ReservationNominate for a pre-allocation reserve pod: the running pod it takes over."""
        cycle = self._cycle(state)
        node = self.handle.cluster.nodes.get(node_name)
        if cycle.pre_allocation is None or node is None:
            return SUCCESS
        if pod.key in node.pods:  # judged as before the reserve pod was assumed on the node
            node = node.copy()
            node.remove_pod(pod.key)
        chosen = preallocation.nominate(pod, cycle.pre_allocation, node, cycle.pre_allocatable.get(node_name, []))
        if chosen is None:
            return unschedulable(preallocation.REASON_NO_PODS) if cycle.pre_required else SUCCESS
        state.write(PRE_ALLOCATED_KEY, chosen)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pre_allocated = state.read(PRE_ALLOCATED_KEY)
        if isinstance(pre_allocated, PodInfo) and state.read(PRE_ALLOCATED_KEY + "/marked"):
            preallocation.unmark(self.handle, pre_allocated)  # unreservePod: the pod is its own again
        state.delete(PRE_ALLOCATED_KEY)
        state.delete(PRE_ALLOCATED_KEY + "/marked")
        chosen = state.read(RESERVED_KEY)
        if isinstance(chosen, ReservationInfo):
            self.index.release(chosen.name, pod.key)
            state.delete(RESERVED_KEY)
            state.delete(RESERVED_RESERVATION)

    # --- PreBind / Bind --------------------------------------------------------------------------
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """`pod` is the framework's copy: the annotation goes on it (DefaultPreBind patches it);
        the Reservation's status gains the owner and the allocated total."""
        pre_allocated = state.read(PRE_ALLOCATED_KEY)
        if is_reserve_pod(pod) and isinstance(pre_allocated, PodInfo):
            status = self._pre_bind_pre_allocated(pod, pre_allocated)
            if status.is_success:
                state.write(PRE_ALLOCATED_KEY + "/marked", True)
            return status
        chosen = state.read(RESERVED_KEY)
        if not isinstance(chosen, ReservationInfo):
            return SUCCESS
        annotations = pod.obj.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION_RESERVATION_ALLOCATED] = json.dumps(
            {"name": chosen.name, "uid": chosen.uid}, separators=(",", ":")
        )
        owners = [
            o
            for o in chosen.status.get("currentOwners") or []
            if o.get("name") != pod.name or o.get("namespace") != pod.namespace
        ]
        owners.append({"namespace": pod.namespace, "name": pod.name, "uid": pod.metadata.get("uid", "")})
        allocated = self.index.allocated(chosen.name)
        return self._patch_status(chosen.name, {"currentOwners": owners, "allocated": quantities(allocated)})

    def _pre_bind_pre_allocated(self, reserve_pod: PodInfo, target: PodInfo) -> Status:
        info = self.index.infos.get(reserve_pod.annotations.get(ANNOTATION_RESERVATION_NAME, ""))
        return preallocation.mark(self.handle, info, target)

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not is_reserve_pod(pod):
            return SKIP
        name = pod.annotations.get(ANNOTATION_RESERVATION_NAME, pod.name)
        info = self.index.infos.get(name)
        if info is None:
            return error(f"reservation {name!r} not found")
        pre_allocated = state.read(PRE_ALLOCATED_KEY)
        owner = pre_allocated if isinstance(pre_allocated, PodInfo) else None
        return self._patch_status(name, available_status(info, node_name, self.handle.clock(), owner))

    def _patch_status(self, name: str, fields: dict[str, Any]) -> Status:
        info = self.index.infos.get(name)
        status = dict(info.status) if info is not None else {}
        ops: list[dict[str, Any]] = [{"op": "add", "path": "/status", "value": {**status, **fields}}]
        try:
            self.handle.client.patch(RESERVATION_KIND, "", name, ops)
        except ClientError as exc:
            return error(f"failed to update reservation {name}: {exc}")
        return SUCCESS


def new(args: Any, handle: Handle) -> Reservation:
    return Reservation(handle)

"""DeviceShare (Koordinator's `pkg/scheduler/plugins/deviceshare/plugin.go`): GPUs for pods that ask
for them, whole or shared, from the node's Device object; what each pod holds is read back from its
device-allocated annotation.

Cards are chosen by the scoring strategy: LeastAllocated (the default) puts a shared request on the
card with the most free memory ratio, MostAllocated packs it onto the busiest card that fits
(ties: lower minor). A whole card must be untouched.

The cards a Reservation holds (its `device-allocated`, written on the Reservation at PreBind) are
taken for every other pod; for an owner (Koordinator's `deviceshare/reservation.go`
tryAllocateFromReusable) what a matched reservation still holds is free again and its cards come
first; under the `Restricted` policy the owner gets only those cards, within what the reservation
still holds of each. A pod that must use a reservation (`reservation-affinity`) is not placed on
the node alone. Not implemented: RDMA/FPGA/NPU devices, topology hints and NUMA alignment of
devices, ResizePod.

PreFilter extensions (AddPod/RemovePod, Koordinator's `preemptibleDevices`): preemption's victims
give their cards back in the cycle's `PodOverlay`, which Filter reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import ANNOTATION_DEVICE_ALLOCATED, DEVICE_KIND, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO
from policies.apis.devices import (
    DEVICE_TYPE_GPU,
    FULL,
    DeviceAllocation,
    DeviceInfo,
    allocations_json,
    allocations_of,
    devices_of,
)
from policies.apis.objects import ensure_map
from scheduler_plugins.scheduler.framework.columns import EachNodeFilter
from scheduler_plugins.scheduler.framework.cycle_state import (
    MATCHED_RESERVATIONS,
    PRE_ALLOCATABLE,
    RESERVATION_NOMINATOR,
    RESERVED_RESERVATION,
    CycleState,
)
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.holdings import ReservationsHoldLikePods
from scheduler_plugins.scheduler.framework.interfaces import NodeScore, PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.pod_overlay import (
    free_in_cycle,
    give_back_in_cycle,
    held_in_cycle,
)
from scheduler_plugins.scheduler.framework.scoring import least_requested, most_requested
from scheduler_plugins.scheduler.framework.status import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Status,
    unresolvable,
    unschedulable,
)
from scheduler_plugins.scheduler.plugins.deviceshare.args import DeviceShareArgs
from scheduler_plugins.scheduler.plugins.deviceshare.request import GPURequest, InvalidRequest, gpu_request
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import MOST_ALLOCATED
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import (
    POLICY_RESTRICTED,
    REASON_PREFIX,
    ReservationInfo,
    matched_on,
    nominated_for,
    requires_reservation,
)

NAME = "DeviceShare"
_STATE_KEY = NAME + "/request"
_RESERVED_KEY = NAME + "/reserved"
_OVERLAY_KEY = NAME + "/preemptible"
ERR_INSUFFICIENT = "Insufficient gpu devices"


@dataclass(frozen=True)
class _Reuse:
    """Cards a pod may take beyond the node's free ones: what the entry `key` holds (a matched
    reservation's remainder, or the pod a pre-allocating reserve pod takes over), preferred.
    `restricted`: only those cards, within that holding; `superset`: every one of those cards."""

    key: str
    gpus: tuple[DeviceAllocation, ...]
    restricted: bool = False
    superset: bool = False


@dataclass(frozen=True)
class _Held:
    gpus: tuple[DeviceAllocation, ...]
    assumed: bool = False


class DeviceShare(ReservationsHoldLikePods):
    name = NAME
    listened_kinds = frozenset({DEVICE_KIND})

    def __init__(self, args: DeviceShareArgs, handle: Handle) -> None:
        self.args = args
        self.cluster = handle.cluster
        self.devices: dict[str, list[DeviceInfo]] = {}
        self.held: dict[str, dict[str, _Held]] = {}
        #: the optional vector path, held equal to `filter`: its Filter has no columnar form (a
        #: node without GPUs is a dictionary lookup), so the path asks `filter` node by node
        self.vector = EachNodeFilter(self)

    # --- listeners -------------------------------------------------------------------------------
    def on_object(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> None:
        if obj is None:
            self.devices.pop(name, None)
        else:
            self.devices[name] = [d for d in devices_of(obj) if d.type == DEVICE_TYPE_GPU]
        self.cluster.touch(name)

    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None:
        gpus = allocations_of(pod.obj).get(DEVICE_TYPE_GPU)
        held = self.held.setdefault(node_name, {})
        if gpus:
            held[pod.key] = _Held(tuple(gpus))
        elif pod.key in held and not held[pod.key].assumed:
            del held[pod.key]  # an assumed allocation waits for the annotated pod (or Unreserve)

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None:
        self.held.get(node_name, {}).pop(pod.key, None)

    # --- the allocator ---------------------------------------------------------------------------
    def _held_view(self, node_name: str, state: CycleState | None = None) -> dict[str, tuple[DeviceAllocation, ...]]:
        """What each entry holds on the node, a reservation counting only what its owners have not
        taken (they are counted as themselves), as this cycle's PreFilter extensions left it
        (`state`'s overlay: preemption's victims removed)."""
        held = held_in_cycle(state, _OVERLAY_KEY, node_name, self.held.get(node_name, {}))
        out = {key: h.gpus for key, h in held.items()}
        index = self.cluster.reservations
        for name in index.by_node.get(node_name, ()):
            info = index.infos.get(name)
            if info is None or info.reserve_pod.key not in out:
                continue
            owners = [held[o].gpus for o in index.allocations.get(name, {}) if o in held]
            out[info.reserve_pod.key] = _less(out[info.reserve_pod.key], owners)
        return out

    def _restore(
        self, node_name: str, info: ReservationInfo, state: CycleState | None = None
    ) -> tuple[DeviceAllocation, ...] | None:
        """What a matched reservation still holds on the node (None: it holds no card here)."""
        key = info.reserve_pod.key
        if key not in self.held.get(node_name, {}):
            return None
        return self._held_view(node_name, state).get(key)

    def _options(
        self, state: CycleState, pod: PodInfo, node_name: str, nominated: str | None = None
    ) -> list[_Reuse | None]:
        """Each matched reservation holding cards here (what it still holds), each pod a
        pre-allocating reserve pod may take over (its cards), then the node alone unless the pod
        must use one of its reservations."""
        options: list[_Reuse | None] = []
        for info in matched_on(state.read(MATCHED_RESERVATIONS), node_name, nominated):
            remaining = self._restore(node_name, info, state)
            if remaining is not None:
                restricted = info.allocate_policy == POLICY_RESTRICTED
                options.append(_Reuse(info.reserve_pod.key, remaining, restricted))
        takeover = state.read(PRE_ALLOCATABLE)
        held = self.held.get(node_name, {})
        if isinstance(takeover, Mapping):
            for other in takeover.get(node_name) or ():
                if other.key in held:
                    options.append(_Reuse(other.key, held[other.key].gpus, superset=True))
        if not options or not requires_reservation(pod):
            options.append(None)
        return options

    def _allocate_any(
        self, state: CycleState, pod: PodInfo, node_name: str, request: GPURequest, nominated: str | None = None
    ) -> tuple[DeviceAllocation, ...] | Status:
        """The first option's cards; else Unschedulable (`Reservation(s) ...` when the pod may only
        use its reservations, Koordinator's makeReasonsByReservation)."""
        options = self._options(state, pod, node_name, nominated)
        for option in options:
            chosen = self.allocate(node_name, request, option, state)
            if chosen is not None:
                return chosen
        required = options and all(o is not None and not o.superset for o in options)
        return unschedulable((REASON_PREFIX if required else "") + ERR_INSUFFICIENT)

    def free(self, node_name: str, restore: str = "", state: CycleState | None = None) -> dict[int, Vector]:
        """Free gpu-core, gpu-memory-ratio and gpu-memory of each healthy card of the node (with
        what the reservation keyed `restore` holds given back, and `state`'s preemption victims)."""
        free = {
            d.minor: {
                GPU_CORE: d.resources.get(GPU_CORE, FULL),
                GPU_MEMORY_RATIO: d.resources.get(GPU_MEMORY_RATIO, FULL),
                GPU_MEMORY: d.memory,
            }
            for d in self.devices.get(node_name, [])
            if d.health
        }
        for key, gpus in self._held_view(node_name, state).items():
            if key == restore:
                continue
            for gpu in gpus:
                if gpu.minor in free:
                    for name, amount in gpu.resources.items():
                        if name in free[gpu.minor]:
                            free[gpu.minor][name] -= amount
        return free

    def allocate(
        self,
        node_name: str,
        request: GPURequest,
        option: _Reuse | None = None,
        state: CycleState | None = None,
    ) -> tuple[DeviceAllocation, ...] | None:
        """The cards for `request`; with `option` its cards first (given back to the pod), or only
        them, within what it holds of each, when it is restricted; all of them when a superset is
        asked."""
        cards = {d.minor: d for d in self.devices.get(node_name, []) if d.health}
        preferred: dict[int, Mapping[str, int]] = {}
        restricted = False
        restore = ""
        if option is not None:
            preferred = {g.minor: g.resources for g in option.gpus}
            restricted, restore = option.restricted, option.key
        fitting = []
        for minor, room in self.free(node_name, restore, state).items():
            if restricted:
                if minor not in preferred:
                    continue
                room = {name: min(amount, preferred[minor].get(name, 0)) for name, amount in room.items()}
            card = cards[minor]
            core, ratio, memory = request.on_card(card.memory)
            if not request.shared:
                fits = room[GPU_CORE] >= FULL and room[GPU_MEMORY_RATIO] >= FULL and room[GPU_MEMORY] >= card.memory
            else:
                fits = room[GPU_CORE] >= core and room[GPU_MEMORY_RATIO] >= ratio and room[GPU_MEMORY] >= memory
            if fits:
                fitting.append((room[GPU_MEMORY_RATIO], minor, core, ratio, memory))
        sign = 1 if self.args.scoring_strategy.type == MOST_ALLOCATED else -1
        fitting.sort(key=lambda f: (f[1] not in preferred, sign * f[0], f[1]))
        if len(fitting) < request.count:
            return None
        if option is not None and option.superset and not set(preferred) <= {f[1] for f in fitting[: request.count]}:
            return None
        return tuple(
            DeviceAllocation(minor, {GPU_CORE: core, GPU_MEMORY_RATIO: ratio, GPU_MEMORY: memory})
            for _, minor, core, ratio, memory in fitting[: request.count]
        )

    # --- extension points ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        try:
            request = gpu_request(pod.requests)
        except InvalidRequest as exc:
            return None, unresolvable(f"invalid GPU request: {exc}")
        if request is None:
            return None, SKIP
        state.write(_STATE_KEY, request)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        request: GPURequest | None = state.read(_STATE_KEY)
        if request is None:
            return SUCCESS
        if not any(d.health for d in self.devices.get(node.name, [])):
            return unresolvable(ERR_INSUFFICIENT)
        chosen = self._allocate_any(state, pod, node.name, request)
        return chosen if isinstance(chosen, Status) else SUCCESS

    def filter_nominate_reservation(
        self, state: CycleState, pod: PodInfo, info: ReservationInfo, node: NodeInfo
    ) -> Status:
        """FilterNominateReservation: whether this reservation's cards can serve the pod (one that holds
        none has nothing to refuse)."""
        request: GPURequest | None = state.read(_STATE_KEY)
        remaining = self._restore(node.name, info, state) if request is not None else None
        if request is None or remaining is None:
            return SUCCESS
        option = _Reuse(info.reserve_pod.key, remaining, info.allocate_policy == POLICY_RESTRICTED)
        chosen = self.allocate(node.name, request, option, state)
        return SUCCESS if chosen is not None else unschedulable(ERR_INSUFFICIENT)

    # --- PreFilter extensions --------------------------------------------------------------------
    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """`other` holds its cards again (a reprieved victim); a pod holding none here (a nominated
        pod not bound yet) adds nothing, as Koordinator's AddPod."""
        give_back_in_cycle(state, _STATE_KEY, _OVERLAY_KEY, node.name, other.key, self.held.get(node.name, {}))
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """`other`'s cards are free in this cycle (a preemption's victim)."""
        free_in_cycle(state, _STATE_KEY, _OVERLAY_KEY, node.name, other.key, self.held.get(node.name, {}))
        return SUCCESS

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        return SUCCESS if state.read(_STATE_KEY) is not None else SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        request: GPURequest | None = state.read(_STATE_KEY)
        found = self._allocate_any(state, pod, node.name, request) if request is not None else None
        chosen = None if isinstance(found, Status) else found
        if chosen is None:
            return 0, SUCCESS
        cards = [d for d in self.devices.get(node.name, []) if d.health]
        free = self.free(node.name)
        strategy = self.args.scoring_strategy
        scorer = most_requested if strategy.type == MOST_ALLOCATED else least_requested
        total = weights = 0
        for name, weight in strategy.resources:
            capacity = sum(d.resources.get(name, 0) for d in cards)
            if not capacity:
                continue
            requested = capacity - sum(room.get(name, 0) for room in free.values())
            requested += sum(g.resources.get(name, 0) for g in chosen)
            total += scorer(requested, capacity) * weight
            weights += weight
        return (total // weights if weights else 0), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """Scale so the best node gets 100 (kube-scheduler's DefaultNormalizeScore)."""
        highest = max((s.score for s in scores), default=0)
        if highest:
            for s in scores:
                s.score = s.score * MAX_NODE_SCORE // highest
        return SUCCESS

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        request: GPURequest | None = state.read(_STATE_KEY)
        if request is None:  # no PreFilter in this cycle (the extender's bind verb): ask the pod
            try:
                request = gpu_request(pod.requests)
            except InvalidRequest as exc:
                return unresolvable(f"invalid GPU request: {exc}")
        if request is None:
            return SUCCESS
        nominated = nominated_for(state.read(RESERVED_RESERVATION), state.read(RESERVATION_NOMINATOR), node_name)
        chosen = self._allocate_any(state, pod, node_name, request, nominated)
        if isinstance(chosen, Status):
            return chosen
        self.held.setdefault(node_name, {})[pod.key] = _Held(chosen, assumed=True)
        state.write(_RESERVED_KEY, chosen)
        self.cluster.touch(node_name)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        held = self.held.get(node_name, {})
        if pod.key in held and held[pod.key].assumed:
            del held[pod.key]
        state.delete(_RESERVED_KEY)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        chosen = state.read(_RESERVED_KEY)
        if chosen:
            annotations = ensure_map(ensure_map(pod.obj, "metadata"), "annotations")
            annotations[ANNOTATION_DEVICE_ALLOCATED] = allocations_json({DEVICE_TYPE_GPU: list(chosen)})
        return SUCCESS

    def explain_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> dict[str, Any] | None:
        """The cards the pod would get on this node, for `explain`."""
        request: GPURequest | None = state.read(_STATE_KEY)
        found = self._allocate_any(state, pod, node.name, request) if request is not None else None
        chosen = None if isinstance(found, Status) else found
        if not chosen:
            return None
        detail: dict[str, Any] = json.loads(allocations_json({DEVICE_TYPE_GPU: list(chosen)}))
        return detail


def _less(
    gpus: tuple[DeviceAllocation, ...], taken: list[tuple[DeviceAllocation, ...]]
) -> tuple[DeviceAllocation, ...]:
    """`gpus` less what `taken` holds of the same cards, never below zero."""
    left = {g.minor: dict(g.resources) for g in gpus}
    for other in taken:
        for gpu in other:
            for name, amount in gpu.resources.items():
                if gpu.minor in left and name in left[gpu.minor]:
                    left[gpu.minor][name] = max(0, left[gpu.minor][name] - amount)
    return tuple(DeviceAllocation(minor, resources) for minor, resources in left.items())


def new(args: DeviceShareArgs, handle: Handle) -> DeviceShare:
    return DeviceShare(args, handle)

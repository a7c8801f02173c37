"""NodeNUMAResource (Koordinator's `pkg/scheduler/plugins/nodenumaresource/plugin.go`): LSR/LSE pods
of the prod band with integer CPUs get whole, NUMA-aligned CPUs; pods and nodes with a NUMA topology
policy are admitted by NUMA node.

PreFilter decides whether the pod binds CPUs and by which policy; Filter checks each node's
policies, topology and room; Reserve picks the CPUs (and NUMA nodes) and PreBind writes them in the
`scheduling.koordinator.sh/resource-status` annotation, which is also how the CPUs of bound pods
are read back. Score is the allocation scorer of `scoringStrategy` over the node, or of
`numaScoringStrategy` over the admitted NUMA nodes (not enabled in the shipped profile:
NodeResourcesFit scores the same resources). The CPUs a Reservation holds are set aside for its
owners (`reservation.py`). PreFilter extensions (AddPod/RemovePod, Koordinator's `preempt.go`):
preemption's victims give their CPUs and NUMA resources back in the cycle's `PodOverlay`, which
Filter reads. Not implemented: amplified-CPU checks, exclusive policies
(PCPULevel/NUMANodeLevel), ConstrainedBurst.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_RESOURCE_SPEC,
    ANNOTATION_RESOURCE_STATUS,
    LABEL_NODE_CPU_BIND_POLICY,
    LABEL_NODE_NUMA_ALLOCATE_STRATEGY,
    LABEL_NODE_NUMA_TOPOLOGY_POLICY,
    NODE_RESOURCE_TOPOLOGY_KIND,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
)
from policies.apis.cpuset import resource_status_of
from policies.apis.objects import ensure_map
from policies.apis.quantity import scalar_of
from scheduler_plugins.scheduler.framework.cycle_state import (
    MATCHED_RESERVATIONS,
    PRE_ALLOCATABLE,
    RESERVATION_NOMINATOR,
    RESERVED_RESERVATION,
    CycleState,
)
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.holdings import ReservationsHoldLikePods
from scheduler_plugins.scheduler.framework.interfaces import PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.pod_overlay import (
    free_in_cycle,
    give_back_in_cycle,
    held_in_cycle,
)
from scheduler_plugins.scheduler.framework.scoring import least_requested, most_requested
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, unresolvable, unschedulable
from scheduler_plugins.scheduler.plugins.nodenumaresource.allocator import numa_order
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import (
    FULL_PCPUS,
    MOST_ALLOCATED,
    SPREAD_BY_PCPUS,
    NodeNUMAResourceArgs,
)
from scheduler_plugins.scheduler.plugins.nodenumaresource.request import (
    ERR_NOT_INTEGER,
    PodState,
    pod_state,
    resource_status,
    split_by_numa,
)
from scheduler_plugins.scheduler.plugins.nodenumaresource.reservation import (
    Option,
    owners_view,
    pre_allocatable,
    restored,
)
from scheduler_plugins.scheduler.plugins.nodenumaresource.topology import (
    Allocation,
    NodeState,
    NodeTopology,
    numa_hint,
    reserved_cpus,
)
from scheduler_plugins.scheduler.plugins.nodenumaresource.vector import NodeNUMAResourceVector
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import (
    REASON_PREFIX,
    ReservationInfo,
    matched_on,
    nominated_for,
    requires_reservation,
)

NAME = "NodeNUMAResource"
_STATE_KEY = NAME + "/preFilter"
_RESERVED_KEY = NAME + "/reserved"
_OVERLAY_KEY = NAME + "/preemptible"
NODE_FULL_PCPUS_ONLY: Final = "FullPCPUsOnly"
NODE_SPREAD_BY_PCPUS: Final = "SpreadByPCPUs"
NUMA_RESTRICTED: Final = "Restricted"
NUMA_SINGLE_NODE: Final = "SingleNUMANode"

ERR_NUMA_POLICY = "node(s) NUMA Topology policy not match"
ERR_INVALID_TOPOLOGY = "node(s) invalid CPU Topology"
ERR_POLICY_CONFLICT = "node(s) cpu bind policy conflicts with pod's required cpu bind policy"
ERR_NOT_MULTIPLE = "node(s) requested cpus not multiple cpus per core"
ERR_NOT_ENOUGH = "not enough cpus available to satisfy request"
ERR_NUMA_AFFINITY = "node(s) NUMA Topology affinity error"


@dataclass(frozen=True)
class _Decision:
    """A node's verdict for the pod: binding policy and the NUMA nodes admitted (or none)."""

    bind: bool
    policy: str
    numa_policy: str
    hint: list[int] | None


class NodeNUMAResource(ReservationsHoldLikePods):
    name = NAME
    listened_kinds = frozenset({NODE_RESOURCE_TOPOLOGY_KIND})

    def __init__(self, args: NodeNUMAResourceArgs, handle: Handle) -> None:
        self.args = args
        self.cluster = handle.cluster
        self.topologies: dict[str, NodeTopology] = {}
        self.allocations: dict[str, dict[str, Allocation]] = {}
        self._node_list: list[NodeInfo] | None = None
        self._by_name: dict[str, NodeInfo] = {}
        #: the optional vector path (numpy), held equal to `filter`
        self.vector = NodeNUMAResourceVector(self)

    # --- listeners -------------------------------------------------------------------------------
    def on_object(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> None:
        if obj is None:
            self.topologies.pop(name, None)
        else:
            self.topologies[name] = NodeTopology.of(obj)
        self.cluster.touch(name)

    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None:
        status = resource_status_of(pod.obj)
        held = self.allocations.setdefault(node_name, {})
        numa = {
            r.node: {name: scalar_of(name, value) for name, value in r.resources.items()}
            for r in status.numa_node_resources
        }
        if status.cpuset or numa:
            held[pod.key] = Allocation(status.cpus(), numa)
        elif pod.key in held and not held[pod.key].assumed:
            del held[pod.key]  # an assumed allocation waits for the annotated pod (or Unreserve)

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None:
        self.allocations.get(node_name, {}).pop(pod.key, None)

    def node_state(self, node: NodeInfo, state: CycleState | None = None) -> NodeState | None:
        """The node's topology and what its pods hold: each reservation counted for what its owners
        do not hold (`owners_view`), as this cycle's PreFilter extensions left it (`state`'s
        overlay: preemption's victims removed)."""
        topo = self.topologies.get(node.name)
        if topo is None:
            return None
        held = owners_view(self.allocations.get(node.name, {}), self.cluster.reservations, node.name)
        held = held_in_cycle(state, _OVERLAY_KEY, node.name, held)
        return NodeState(topo, reserved_cpus(node.annotations), node.allocatable.get(RESOURCE_MEMORY, 0), held)

    # --- PreFilter extensions --------------------------------------------------------------------
    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """`other` holds its CPUs again (a reprieved victim). A pod that holds none here (a
        nominated pod not bound yet) adds nothing, as Koordinator's AddPod."""
        give_back_in_cycle(state, _STATE_KEY, _OVERLAY_KEY, node.name, other.key, self.allocations.get(node.name, {}))
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """`other`'s CPUs and NUMA resources are free in this cycle (a preemption's victim)."""
        free_in_cycle(state, _STATE_KEY, _OVERLAY_KEY, node.name, other.key, self.allocations.get(node.name, {}))
        return SUCCESS

    def _options(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: str | None = None
    ) -> list[Option | None]:
        """The node as the pod sees it: once per matched reservation holding CPUs here (restored),
        then the node alone, unless the pod must use one of those reservations."""
        base = self.node_state(node, state)
        if base is None:
            return [None]
        matched = matched_on(state.read(MATCHED_RESERVATIONS), node.name, nominated)
        options: list[Option | None] = list(restored(base, matched, self.cluster.reservations, pod.key))
        takeover = state.read(PRE_ALLOCATABLE)
        if isinstance(takeover, Mapping) and takeover.get(node.name):
            options += pre_allocatable(base, tuple(takeover[node.name]))
        if not options or not requires_reservation(pod):
            options.append(Option(base))
        return options

    # --- PreFilter -------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        st, status = pod_state(pod, self.args.default_cpu_bind_policy)
        if st is not None:
            state.write(_STATE_KEY, st)
        return None, status

    def _state(self, state: CycleState, pod: PodInfo) -> PodState | None:
        """PreFilter's verdict, computed here when this cycle had no PreFilter (the extender's
        bind verb runs Reserve and PreBind in a cycle of their own)."""
        st: PodState | None = state.read(_STATE_KEY)
        if st is None:
            st = pod_state(pod, self.args.default_cpu_bind_policy)[0]
            if st is not None:
                state.write(_STATE_KEY, st)
        return st

    # --- Filter ----------------------------------------------------------------------------------
    def _decide(
        self, st: PodState, node: NodeInfo, option: Option | None = None, state: CycleState | None = None
    ) -> tuple[_Decision | None, Status]:
        node_numa = node.labels.get(LABEL_NODE_NUMA_TOPOLOGY_POLICY, "")
        if st.numa_policy and node_numa and st.numa_policy != node_numa:
            return None, unresolvable(ERR_NUMA_POLICY)
        numa_policy = st.numa_policy or node_numa
        node_bind = node.labels.get(LABEL_NODE_CPU_BIND_POLICY, "")
        forced = {NODE_FULL_PCPUS_ONLY: FULL_PCPUS, NODE_SPREAD_BY_PCPUS: SPREAD_BY_PCPUS}.get(node_bind, "")
        bind, policy = st.bind, st.policy
        if forced and st.allow_cpuset and st.cpu > 0 and not bind:
            if st.cpu % 1000:
                return None, unresolvable(ERR_NOT_INTEGER)
            bind = True
        if not bind and numa_policy not in (NUMA_RESTRICTED, NUMA_SINGLE_NODE):
            return _Decision(False, "", numa_policy, None), SUCCESS
        ns = option.state if option is not None else self.node_state(node, state)
        if bind:
            if ns is None or not ns.topo.topology.valid:
                return None, unresolvable(ERR_INVALID_TOPOLOGY)
            if forced:
                if st.required and st.policy != forced:
                    return None, unresolvable(ERR_POLICY_CONFLICT)
                policy = forced
            required = st.required or bool(forced)
            if required and policy == FULL_PCPUS and st.num_cpus % ns.topo.topology.cpus_per_core:
                return None, unresolvable(ERR_NOT_MULTIPLE)
            if required and numa_policy not in (NUMA_RESTRICTED, NUMA_SINGLE_NODE):
                if _option(option, ns).allocate(st.num_cpus, policy, self._strategy(node)) is None:
                    return None, unschedulable(ERR_NOT_ENOUGH)
        hint = None
        if numa_policy in (NUMA_RESTRICTED, NUMA_SINGLE_NODE):
            if ns is None or not ns.topo.topology.valid:
                return None, unresolvable(ERR_INVALID_TOPOLOGY)
            order = numa_order(ns.topo.topology, ns.free_cpus(), self._strategy(node))
            hint = numa_hint(ns, {RESOURCE_CPU: st.cpu, RESOURCE_MEMORY: st.memory}, numa_policy, order)
            if hint is None:
                return None, unschedulable(ERR_NUMA_AFFINITY)
            if bind and _option(option, ns).allocate(st.num_cpus, policy, self._strategy(node), hint) is None:
                return None, unschedulable(ERR_NUMA_AFFINITY)
        if bind and option is not None and option.restricted and ns is not None:
            # a Restricted reservation serves the pod only from its own CPUs, whatever the policy asks
            if option.allocate(st.num_cpus, policy, self._strategy(node), hint) is None:
                return None, unschedulable(ERR_NOT_ENOUGH)
        return _Decision(bind, policy, numa_policy, hint), SUCCESS

    def _decide_any(
        self, state: CycleState, st: PodState, pod: PodInfo, node: NodeInfo, nominated: str | None = None
    ) -> tuple[_Decision | None, Status, Option | None]:
        """`_decide` over the node's options (restored reservations first): the first that admits."""
        first: Status | None = None
        options = self._options(state, pod, node, nominated)
        for option in options:
            decision, status = self._decide(st, node, option)
            if status.is_success:
                return decision, status, option
            first = first or status
        assert first is not None
        if all(o is not None and o.reservation is not None for o in options):  # required from a reservation
            first = Status(first.code, tuple(REASON_PREFIX + r for r in first.reasons))
        return None, first, None

    @staticmethod
    def _strategy(node: NodeInfo) -> str:
        return node.labels.get(LABEL_NODE_NUMA_ALLOCATE_STRATEGY, MOST_ALLOCATED)

    def filter_state(self, state: CycleState) -> PodState | None:
        """What PreFilter learnt of the pod (None: `filter` passes every node)."""
        st: PodState | None = state.read(_STATE_KEY)
        return st

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        st = self.filter_state(state)
        if st is None:
            return SUCCESS
        return self._decide_any(state, st, pod, node)[1]

    def filter_nominate_reservation(
        self, state: CycleState, pod: PodInfo, info: ReservationInfo, node: NodeInfo
    ) -> Status:
        """FilterNominateReservation: whether this reservation's CPUs can serve the pod (one that holds
        none has nothing to refuse)."""
        st = self._state(state, pod)
        base = self.node_state(node, state)
        if st is None or base is None:
            return SUCCESS
        options = restored(base, [info], self.cluster.reservations, pod.key)
        return self._decide(st, node, options[0])[1] if options else SUCCESS

    # --- Score -----------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The allocation scorer of `scoringStrategy` over the node; for a pod placed by a NUMA
        policy, `numaScoringStrategy` over the NUMA nodes it would get. A failure scores 0."""
        st = state.read(_STATE_KEY)
        decision = self._decide(st, node)[0] if st is not None else None
        ns = self.node_state(node)
        if decision is not None and decision.hint is not None and ns is not None:
            capacity, free = ns.numa_capacity(), ns.numa_free()
            strategy = self.args.numa_scoring_strategy
            allocatable = {r: sum(capacity[n].get(r, 0) for n in decision.hint) for r, _ in strategy.resources}
            requested = {
                r: allocatable[r] - sum(free[n].get(r, 0) for n in decision.hint) + pod.requests.get(r, 0)
                for r, _ in strategy.resources
            }
        else:
            strategy = self.args.scoring_strategy
            allocatable = {r: node.allocatable.get(r, 0) for r, _ in strategy.resources}
            requested = {r: node.requested.get(r, 0) + pod.requests.get(r, 0) for r, _ in strategy.resources}
        scorer = most_requested if strategy.type == MOST_ALLOCATED else least_requested
        total = weights = 0
        for name, weight in strategy.resources:
            total += scorer(requested[name], allocatable[name]) * weight
            weights += weight
        return (total // weights if weights else 0), SUCCESS

    # --- Reserve / PreBind -----------------------------------------------------------------------
    def plan(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[Allocation | None, Status]:
        """What the pod would hold on `node` (None: nothing NUMA-aware to hold)."""
        st = self._state(state, pod)
        if st is None:
            return None, SUCCESS
        nominated = nominated_for(state.read(RESERVED_RESERVATION), state.read(RESERVATION_NOMINATOR), node.name)
        decision, status, option = self._decide_any(state, st, pod, node, nominated)
        if decision is None or not (decision.bind or decision.hint is not None):
            return None, status
        ns = option.state if option is not None else self.node_state(node)
        assert ns is not None
        cpus: frozenset[int] = frozenset()
        if decision.bind:
            chosen = _option(option, ns).allocate(st.num_cpus, decision.policy, self._strategy(node), decision.hint)
            if chosen is None:
                return None, unschedulable(ERR_NOT_ENOUGH)
            cpus = chosen
        numa: dict[int, Vector] = {}
        if decision.hint is not None:
            numa = split_by_numa(ns, cpus, decision.hint, st.cpu, st.memory)
        return Allocation(cpus, numa, assumed=True), SUCCESS

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        node = self.cluster_node(node_name)
        if node is None:
            return SUCCESS
        allocation, status = self.plan(state, pod, node)
        if not status.is_success or allocation is None:
            return status
        self.allocations.setdefault(node_name, {})[pod.key] = allocation
        state.write(_RESERVED_KEY, allocation)
        self.cluster.touch(node_name)
        return SUCCESS

    def cluster_node(self, name: str) -> NodeInfo | None:
        nodes = self.cluster.node_list()
        if nodes is not self._node_list:  # the cluster's list is rebuilt when nodes come and go
            self._node_list, self._by_name = nodes, {n.name: n for n in nodes}
        return self._by_name.get(name)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        held = self.allocations.get(node_name, {})
        if pod.key in held and held[pod.key].assumed:
            del held[pod.key]
        state.delete(_RESERVED_KEY)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        allocation: Allocation | None = state.read(_RESERVED_KEY)
        if allocation is None:
            return SUCCESS
        annotations = ensure_map(ensure_map(pod.obj, "metadata"), "annotations")
        annotations[ANNOTATION_RESOURCE_STATUS] = resource_status(allocation).to_json()
        st = state.read(_STATE_KEY)
        if ANNOTATION_RESOURCE_SPEC not in annotations and st is not None and allocation.cpus:
            annotations[ANNOTATION_RESOURCE_SPEC] = json.dumps(
                {"preferredCPUBindPolicy": st.policy or FULL_PCPUS}, separators=(",", ":")
            )
        return SUCCESS

    def explain_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> dict[str, Any] | None:
        """The CPUs and NUMA nodes the pod would get on this node, for `explain`."""
        allocation, status = self.plan(state, pod, node)
        if allocation is None or not status.is_success:
            return None
        detail: dict[str, Any] = json.loads(resource_status(allocation).to_json())
        return detail


def _option(option: Option | None, ns: NodeState) -> Option:
    return option if option is not None else Option(ns)


def new(args: NodeNUMAResourceArgs, handle: Handle) -> NodeNUMAResource:
    return NodeNUMAResource(args, handle)

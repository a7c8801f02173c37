"""NodeNUMAResource's reservation hooks (Koordinator's `pkg/scheduler/plugins/nodenumaresource/reservation.go`:
RestoreReservation and tryAllocateFromReusable).

A Reservation scheduled with bound CPUs holds them under its reserve pod's key (read back from the
`resource-status` annotation PreBind wrote on the Reservation), so every other pod sees them taken.
For an owner, each reservation it matches on the node is *restored*: the CPUs (and per-NUMA
resources) the reservation still holds, less what its owners already took, become free for that
pod only. Then, per allocate policy:

* `Default`/`Aligned`: the pod takes the reservation's remaining CPUs when they are enough (the
  preferred CPUs), else any CPUs of the restored node;
* `Restricted`: the pod's CPUs must all come from the reservation's remaining CPUs.

The first matched reservation that can serve the pod wins; when none can, a pod that must use a
reservation (`reservation-affinity`) fails, any other falls back to the node without restore.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from scheduler_plugins.scheduler.framework.interfaces import ReservationView
from scheduler_plugins.scheduler.plugins.nodenumaresource.allocator import allocate
from scheduler_plugins.scheduler.plugins.nodenumaresource.topology import Allocation, NodeState
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import POLICY_RESTRICTED, ReservationInfo


@dataclass(frozen=True)
class Option:
    """One way to place the pod on a node: the node state it sees, and when it consumes a
    reservation, that reservation and the CPUs it still holds (`preferred`)."""

    state: NodeState
    reservation: ReservationInfo | None = None
    preferred: frozenset[int] | None = None
    #: a pre-allocating reserve pod: its CPUs must include every CPU of the pod it takes over
    superset: bool = False

    @property
    def restricted(self) -> bool:
        return self.reservation is not None and self.reservation.allocate_policy == POLICY_RESTRICTED

    def allocate(self, n: int, policy: str, strategy: str, hint: list[int] | None = None) -> frozenset[int] | None:
        """The pod's `n` CPUs: out of the reservation's remaining CPUs when they are enough (only
        them when Restricted); a larger pod takes all of them and the rest from the node; else
        any free CPUs of the restored node."""
        chosen = self._allocate(n, policy, strategy, hint)
        if chosen is not None and self.superset and self.preferred and not self.preferred <= chosen:
            return None
        return chosen

    def _allocate(self, n: int, policy: str, strategy: str, hint: list[int] | None) -> frozenset[int] | None:
        topology = self.state.topo.topology
        free = self.state.free_cpus()
        preferred = self.preferred
        if preferred is not None and (self.restricted or n <= len(preferred)):
            chosen = allocate(topology, preferred, n, policy, strategy, hint)
            if chosen is not None or self.restricted:
                return chosen
        elif preferred and (hint is None or all(c.node in hint for c in topology.cpus if c.id in preferred)):
            extra = allocate(topology, free - preferred, n - len(preferred), policy, strategy, hint)
            if extra is not None:  # all the reservation's CPUs, the rest from the node
                return preferred | extra
        return allocate(topology, free, n, policy, strategy, hint)


def owners_view(
    allocations: Mapping[str, Allocation], reservations: ReservationView, node_name: str
) -> Mapping[str, Allocation]:
    """The node's allocations with each reservation's per-NUMA resources less what its owners
    hold (they are counted as themselves): nothing counted twice. CPUs are sets: a reservation's
    CPUs stay taken, its owners' are a subset of them."""
    names = reservations.by_node.get(node_name)
    if not names:
        return allocations
    out = dict(allocations)
    for name in names:
        info = reservations.infos.get(name)
        if info is None:
            continue
        key = info.reserve_pod.key
        held = out.get(key)
        if held is None or not held.numa:
            continue
        numa = {n: dict(v) for n, v in held.numa.items()}
        for owner in reservations.allocations.get(name, {}):
            for n, resources in (allocations.get(owner) or Allocation()).numa.items():
                for resource, amount in resources.items():
                    if n in numa and resource in numa[n]:
                        numa[n][resource] = max(0, numa[n][resource] - amount)
        out[key] = replace(held, numa=numa)
    return out


def pre_allocatable(base: NodeState, pods: tuple[PodInfo, ...]) -> list[Option]:
    """RestoreReservationPreAllocation: one option per pod the reserve pod may take over that holds
    CPUs here, those CPUs free for the reserve pod, which must take them all."""
    options = []
    for pod in pods:
        held = base.allocations.get(pod.key)
        if held is None or not held.cpus:
            continue
        allocations = {k: v for k, v in base.allocations.items() if k != pod.key}
        options.append(Option(replace(base, allocations=allocations), None, frozenset(held.cpus), superset=True))
    return options


def restored(
    base: NodeState, matched: list[ReservationInfo], reservations: ReservationView, pod_key: str
) -> list[Option]:
    """RestoreReservation: one option per matched reservation that holds CPUs or NUMA resources
    on the node, with what it still holds given back to the pod."""
    options = []
    for info in matched:
        key = info.reserve_pod.key
        held = base.allocations.get(key)
        if held is None:
            continue
        owners = [o for o in reservations.allocations.get(info.name, {}) if o != pod_key]
        taken: set[int] = set()
        for owner in owners:
            taken |= (base.allocations.get(owner) or Allocation()).cpus
        allocations = {k: v for k, v in base.allocations.items() if k != key}
        remaining = frozenset(held.cpus - taken)
        options.append(Option(replace(base, allocations=allocations), info, remaining if held.cpus else None))
    return options

"""The cluster state's index of Reservations (docs/scheduler.md, "Reservations"): which hold
capacity where, and who uses it.

An Available reservation holds `allocatable − allocated` on its node as a reserve-pod entry of the
NodeInfo, so every Filter plugin sees the capacity as taken, whether the Reservation plugin is
enabled or not. A pod bound with the `reservation-allocated` annotation (or reserved by the
plugin in this cycle) is an allocation: it is counted on the node as itself, and the held entry
shrinks by its requests, so the node never counts the same resources twice. A pending
Reservation's reserve pod waits in the state's pending set, to be scheduled like a pod.

The scheduler plays two parts of Koordinator's reservation controller in memory: a reservation
whose TTL or `expires` has passed stops holding capacity (`expire`), and an `allocateOnce`
reservation whose owner is bound stops holding the rest (it would turn Succeeded). The objects are
not written back: in a real cluster the controller does that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from policies.apis.constants import ANNOTATION_RESERVATION_ALLOCATED
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import ReservationInfo, held_pod, remaining


class ReservationHost(Protocol):
    """What the index asks of the cluster state that owns it (`ClusterState`): its nodes, to hold
    capacity on, and its pending set, where a pending Reservation's reserve pod waits."""

    def node_named(self, name: str) -> NodeInfo | None: ...

    def add_pending(self, pod: PodInfo) -> None: ...

    def drop_pending(self, key: str) -> None: ...

    def reservation_held(self, reserve_pod: PodInfo, node_name: str) -> None: ...

    def reservation_released(self, reserve_pod: PodInfo, node_name: str) -> None: ...


def allocated_reservation(pod: PodInfo) -> str:
    """The name of the reservation a pod's `reservation-allocated` annotation names, or ""."""
    raw = pod.annotations.get(ANNOTATION_RESERVATION_ALLOCATED)
    if not raw:
        return ""
    try:
        value = json.loads(raw)
    except ValueError:
        return ""
    return str(value.get("name") or "") if isinstance(value, dict) else ""


class ReservationIndex:
    def __init__(self, state: ReservationHost) -> None:
        self.state = state
        self.infos: dict[str, ReservationInfo] = {}
        #: reservation name -> pod key -> the requests that pod takes from it
        self.allocations: dict[str, dict[str, Vector]] = {}
        #: node name -> names of the reservations holding capacity there
        self.by_node: dict[str, set[str]] = {}
        #: reservations no longer holding capacity although their object says Available
        self.released: set[str] = set()
        #: reservations an owner was bound to (an allocateOnce one is then used up)
        self.owner_bound: set[str] = set()
        self._next_expiry: float | None = None
        #: holding reservations by the pod name their owners require, and those open to any name
        self._by_owner_name: dict[str, set[str]] = {}
        self._any_owner: set[str] = set()

    # --- objects ---------------------------------------------------------------------------------
    def put(self, obj: Mapping[str, Any]) -> None:
        info = ReservationInfo(dict(obj))
        old = self.infos.get(info.name)
        if old is not None:
            self._unhold(old)
        self.state.drop_pending(info.reserve_pod.key)
        self.infos[info.name] = info
        if info.allocate_once and info.name in self.owner_bound:
            self.released.add(info.name)
        if info.is_pending:
            self.state.add_pending(info.reserve_pod)
        self._hold(info)
        if info.expires_at is not None and (self._next_expiry is None or info.expires_at < self._next_expiry):
            self._next_expiry = info.expires_at

    def delete(self, name: str) -> None:
        info = self.infos.pop(name, None)
        if info is None:
            return
        self._unhold(info)
        self.state.drop_pending(info.reserve_pod.key)
        self.allocations.pop(name, None)
        self.released.discard(name)
        self.owner_bound.discard(name)

    def expire(self, now: float) -> list[str]:
        """Release every reservation whose TTL/expiry has passed; cheap when none is due."""
        if self._next_expiry is None or now < self._next_expiry:
            return []
        expired, upcoming = [], None
        for info in self.infos.values():
            if info.expires_at is None or info.name in self.released:
                continue
            if info.expired(now):
                expired.append(info.name)
            elif upcoming is None or info.expires_at < upcoming:
                upcoming = info.expires_at
        for name in expired:
            info = self.infos[name]
            self._unhold(info)
            self.state.drop_pending(info.reserve_pod.key)
            self.released.add(name)
        self._next_expiry = upcoming
        return expired

    # --- queries ---------------------------------------------------------------------------------
    def holding(self, info: ReservationInfo) -> bool:
        return info.is_available and info.name not in self.released

    def matchable(self, info: ReservationInfo) -> bool:
        """Usable by a pod: holding capacity, and not an allocateOnce reservation already used."""
        return self.holding(info) and not (info.allocate_once and self.allocations.get(info.name))

    def candidates(self, pod: PodInfo) -> list[ReservationInfo]:
        """The holding reservations whose owners might match `pod` (by name), sorted by name: the
        owner check proper is still the caller's."""
        names = self._by_owner_name.get(pod.name)
        chosen = self._any_owner | names if names else self._any_owner
        return [self.infos[name] for name in sorted(chosen)]

    def allocated(self, name: str) -> Vector:
        total: Vector = {}
        for requests in self.allocations.get(name, {}).values():
            for resource, amount in requests.items():
                total[resource] = total.get(resource, 0) + amount
        return total

    def remaining(self, info: ReservationInfo) -> Vector:
        return remaining(info.allocatable, self.allocated(info.name))

    def allocated_pods(self, name: str) -> int:
        return len(self.allocations.get(name, {}))

    # --- allocations -----------------------------------------------------------------------------
    def allocate(self, name: str, pod: PodInfo) -> None:
        """Count `pod` as using reservation `name` (Reserve, or a bound pod carrying the annotation)."""
        if pod.key in self.allocations.get(name, {}):
            return
        info = self.infos.get(name)
        if info is not None:
            self._unhold(info)
        self.allocations.setdefault(name, {})[pod.key] = dict(pod.requests)
        if info is not None:
            self._hold(info)

    def release(self, name: str, pod_key: str) -> None:
        """Undo `allocate` (Unreserve, or the pod is gone); a pod never allocated is a no-op."""
        info = self.infos.get(name)
        if info is None or pod_key not in self.allocations.get(name, {}):
            return
        self._unhold(info)
        del self.allocations[name][pod_key]
        self._hold(info)

    def pod_bound(self, pod: PodInfo) -> None:
        name = allocated_reservation(pod)
        if not name:
            return
        self.allocate(name, pod)
        self.owner_bound.add(name)
        info = self.infos.get(name)
        if info is not None and info.allocate_once and name not in self.released:
            self._unhold(info)  # the controller would mark it Succeeded: the rest is free again
            self.released.add(name)

    def pod_deleted(self, pod: PodInfo) -> None:
        name = allocated_reservation(pod)
        for reservation in [name] if name else [n for n, pods in self.allocations.items() if pod.key in pods]:
            self.release(reservation, pod.key)

    # --- the held entry on the node ----------------------------------------------------------------
    def _hold(self, info: ReservationInfo) -> None:
        if not self.holding(info):
            return
        self.by_node.setdefault(info.node_name, set()).add(info.name)
        owners = info.owner_names
        if owners is None:
            self._any_owner.add(info.name)
        for owner in owners or ():
            self._by_owner_name.setdefault(owner, set()).add(info.name)
        node = self.state.node_named(info.node_name)
        if node is not None:
            held = held_pod(info, self.remaining(info))
            node.add_pod(held)
            self.state.reservation_held(held, info.node_name)

    def _unhold(self, info: ReservationInfo) -> None:
        self._any_owner.discard(info.name)
        for owner in info.owner_names or ():
            named = self._by_owner_name.get(owner)
            if named is not None:
                named.discard(info.name)
                if not named:
                    del self._by_owner_name[owner]
        names = self.by_node.get(info.node_name)
        if names is not None:
            names.discard(info.name)
            if not names:
                del self.by_node[info.node_name]
        node = self.state.node_named(info.node_name) if info.node_name else None
        if node is not None:
            removed = node.remove_pod(info.reserve_pod.key)
            if removed is not None:
                self.state.reservation_released(removed, info.node_name)

    def held_pods(self) -> list[tuple[PodInfo, str]]:
        """Every held entry with its node (what a late `ReservationListener` is replayed)."""
        out = []
        for node_name, names in sorted(self.by_node.items()):
            node = self.state.node_named(node_name)
            for name in sorted(names):
                pod = node.pods.get(self.infos[name].reserve_pod.key) if node is not None else None
                if pod is not None:
                    out.append((pod, node_name))
        return out

    def node_added(self, node_name: str) -> None:
        """A node (re)appeared: its reservations hold their capacity on it again."""
        for name in list(self.by_node.get(node_name, ())):
            self._hold(self.infos[name])

"""What a preemption's trial freed on a node, as the Reservation plugin's Filter counts it
(Koordinator's `stateData.preemptible` and `preemptibleInRRs`, kept by the plugin's PreFilter
extensions, `pkg/scheduler/plugins/reservation/plugin.go` `AddPod`/`RemovePod`).

The Reservation's Filter judges the node as the cluster holds it (every reservation holding), not
the trial's copy; so a victim's requests must be handed to it apart: `RemovePod` frees them — on
the node, or inside the reservation the victim allocated from — and `AddPod` takes them again (a
reprieved victim, or a nominated pod, which takes them too: amounts may go below zero, as
Koordinator's `quotav1.Subtract` lets them). A victim counts one pod freed. It is `StateData`: one
node's trial never leaks into another's.
"""

from __future__ import annotations

from typing import Final

from policies.apis.constants import RESOURCE_PODS
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector

#: the key of what was freed outside any reservation
ON_NODE: Final = ""


class Preemptible:
    __slots__ = ("freed",)

    def __init__(self) -> None:
        #: node name -> reservation name (ON_NODE: none) -> what the trial freed
        self.freed: dict[str, dict[str, Vector]] = {}

    def clone(self) -> Preemptible:
        other = Preemptible()
        other.freed = {node: {name: dict(v) for name, v in by.items()} for node, by in self.freed.items()}
        return other

    def change(self, node_name: str, reservation: str, pod: PodInfo, sign: int) -> None:
        """`sign` +1: the pod's requests are freed (RemovePod); -1: taken again (AddPod). On the
        node, its requests in the band it consumes (what the node's requested counts); in a
        reservation, its plain requests (what the reservation's allocated counts)."""
        vector = self.freed.setdefault(node_name, {}).setdefault(reservation, {})
        requests = pod.qos_requests if reservation == ON_NODE else pod.requests
        for name, amount in requests.items():
            vector[name] = vector.get(name, 0) + sign * amount
        vector[RESOURCE_PODS] = vector.get(RESOURCE_PODS, 0) + sign

    def on_node(self, node_name: str) -> Vector:
        return self.freed.get(node_name, {}).get(ON_NODE, {})

    def in_reservation(self, node_name: str, reservation: str) -> Vector:
        return self.freed.get(node_name, {}).get(reservation, {})

    def pods(self, node_name: str) -> int:
        """The pods the trial took off the node, inside reservations or not (Koordinator counts
        the trial node's pods)."""
        return sum(v.get(RESOURCE_PODS, 0) for v in self.freed.get(node_name, {}).values())


def plus(*vectors: Vector) -> Vector:
    """The sum of the vectors."""
    total: Vector = {}
    for vector in vectors:
        for name, amount in vector.items():
            total[name] = total.get(name, 0) + amount
    return total


def preemptible_in(state: CycleState, key: str) -> Preemptible:
    """The cycle's record under `key`, written on first use (RemovePod, AddPod)."""
    found: Preemptible | None = state.read(key)
    if found is None:
        found = Preemptible()
        state.write(key, found)
    return found


def freed_in(state: CycleState | None, key: str) -> Preemptible | None:
    """The cycle's record, or None when no trial changed anything (no preemption)."""
    return state.read(key) if state is not None else None

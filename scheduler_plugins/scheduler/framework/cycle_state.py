"""Per-cycle scratch space shared by the plugins of one scheduling cycle (`framework.CycleState`).

Keys are namespaced by the writing plugin's name; values are whatever that plugin needs. A
`clone()` copies each value that is `StateData` (has its own `clone()`, kube's `StateData.Clone`)
and shares the others: plugins store values they do not mutate after writing, except the per-cycle
state their PreFilter extensions (AddPod/RemovePod) adjust, which is StateData so that preemption's
per-node trials and the nominated-pods pass never see each other's changes.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

#: The name of the reservation the pod reserved in this cycle (Koordinator frameworkext's
#: nominated reservation): written by the Reservation plugin at Reserve, read by the scheduling
#: loop to report which reservation a placement consumed.
RESERVED_RESERVATION: Final = "frameworkext/reserved-reservation"
#: Nodes the scheduling loop filters first, whatever its node sampling (Koordinator's PreferNodes):
#: the Reservation plugin names the nodes of the reservations the pod matches, so sampling
#: `percentageOfNodesToScore` of a large cluster never skips the node holding its reservation.
PREFERRED_NODES: Final = "frameworkext/preferred-nodes"

#: The reservations the pod may consume, by node (Koordinator's RestoreReservation `matched`):
#: written by the Reservation plugin before PreFilter, read by the plugins with their own per-node
#: state (NodeNUMAResource, DeviceShare, ElasticQuota) to offer what those reservations hold to the
#: pod. A `dict[str, tuple[ReservationInfo, ...]]`.
MATCHED_RESERVATIONS: Final = "frameworkext/matched-reservations"
#: The Reservation plugin's nomination for the pod on a node (Koordinator's ReservationNominator):
#: a `Callable[[str], ReservationInfo | None]` written before PreFilter, so the plugins that reserve
#: CPUs or cards before the Reservation plugin's Reserve use the reservation it will count the pod
#: against.
RESERVATION_NOMINATOR: Final = "frameworkext/reservation-nominator"
#: For a pre-allocation reserve pod, the running pods it may take over, by node, best first
#: (Koordinator's RestoreReservationPreAllocation `preAllocatable`): written by the Reservation
#: plugin before PreFilter, read by NodeNUMAResource and DeviceShare so the reservation takes over
#: the CPUs and cards of the pod it pre-allocates. A `dict[str, tuple[PodInfo, ...]]`.
PRE_ALLOCATABLE: Final = "frameworkext/pre-allocatable"

#: The PreFilter plugin that rejected the pod this cycle (written by the scheduling loop): a
#: preempting PostFilter that cannot resolve that plugin's rejection does not try.
PREFILTER_REJECTED_BY: Final = "frameworkext/prefilter-rejected-by"


@runtime_checkable
class StateData(Protocol):
    """A cycle-state value that is copied, not shared, when the state is cloned."""

    def clone(self) -> StateData: ...


class CycleState:
    __slots__ = ("_data", "_owned", "skip_filter_plugins", "skip_score_plugins", "before_filter_nodes")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        #: keys whose values are StateData (told apart once, at write: clones are frequent)
        self._owned: set[str] = set()
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        #: BeforeFilter transformers that change only these nodes for this pod (none when the set
        #: is empty), as their BeforePreFilter said: the framework keeps its batch Filter path for
        #: the other nodes. A transformer not listed may change any node.
        self.before_filter_nodes: dict[str, frozenset[str]] = {}

    def read(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value
        if hasattr(value, "clone") and isinstance(value, StateData):
            self._owned.add(key)
        else:
            self._owned.discard(key)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)
        self._owned.discard(key)

    def clone(self) -> CycleState:
        other = CycleState()
        other._data = dict(self._data)
        for key in self._owned:
            other._data[key] = self._data[key].clone()
        other._owned = set(self._owned)
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        other.before_filter_nodes = dict(self.before_filter_nodes)
        return other

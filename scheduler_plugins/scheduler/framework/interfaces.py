"""One small Protocol per extension point (Kubernetes `framework/interface.go`).

A plugin implements only the points it needs; the runtime discovers them with `isinstance`.
Every method returns a `Status` (or a tuple with one) instead of raising. Contracts:

* `Filter` is called once per node and must not mutate the NodeInfo it is given.
* `Score` returns 0..100 unless the plugin also normalises (`ScoreExtensions`).
* `Unreserve` must be idempotent and may be called for a pod that was never reserved.
* A transformer (Koordinator's `pkg/scheduler/frameworkext/interface.go`) runs only when its plugin
  is enabled at the matching point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import Status
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector
from scheduler_plugins.scheduler.reservations import ReservationInfo

#: Table indexes of a node list (`NodeInfo.index`): an array, or a slice when they are 0..n-1 in order.
NodeIndex = npt.NDArray[np.int64] | slice


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """`node_names` None means every node; a set restricts the candidates."""

    node_names: frozenset[str] | None = None


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    nominated_node: str = ""


class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class NextPodPlugin(Protocol):
    """FrameworkExtender NextPod (used by Coscheduling, `pkg/scheduler/plugins/coscheduling/`):
    consulted before the queue, it may name the pod to schedule next (a gang's next member) among
    those still queued. Runs for plugins enabled at preEnqueue; the first answer wins."""

    name: str

    def next_pod(self, queued: Mapping[str, PodInfo]) -> PodInfo | None: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: PodInfo, b: PodInfo) -> bool: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """Optional, for a PreFilter plugin that keeps per-node state of its own (kube's
    `framework.PreFilterExtensions`): adjust this cycle's state as if `other` were added to or
    removed from `node`. Preemption removes its victims this way (`SelectVictimsOnNode`), and a
    cycle adds the pods nominated to a node (`RunFilterPluginsWithNominatedPods`); both run on a
    cloned CycleState, so what is adjusted must be `StateData` the plugin's Filter reads. A plugin
    that has nothing for `other` does nothing."""

    name: str

    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status: ...


class PodFilter(Protocol):
    """The profile's Filter as preemption uses it (`Framework` implements it): Filter on one node
    with the pods nominated there counted, and the PreFilter extensions."""

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class VectorFilter(Protocol):
    """A Filter plugin's optional vector path (its `vector`, see `vector_path`): the plugin's
    `filter` for many nodes at once. Returns a boolean array (True = passes), aligned with `nodes`
    (`index` holds their table indexes), or None to fall back to `filter`. Must agree with `filter`
    node by node; the framework asks `filter` for the reason of each rejection."""

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_] | None: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreemptionExplainer(Protocol):
    """Optional, for `explain`: a PostFilter plugin that preempts says, without changing anything,
    which node it would preempt on and why each victim was chosen; None when it would not act."""

    name: str

    def explain_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> dict[str, Any] | None: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]: ...


@runtime_checkable
class VectorScore(Protocol):
    """A Score plugin's optional vector path (its `vector`, see `vector_path`): the plugin's
    `score` for many nodes at once (an integer array aligned with `nodes`), or None to fall back to
    `score`. Must agree with `score` node by node."""

    def score_array(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.int64] | None: ...


def vector_path(plugin: object) -> object | None:
    """A plugin's optional vector path: the object in its `vector` attribute, which wraps the
    plugin's plain `filter`/`score` with numpy forms of them (`VectorFilter`, `VectorScore`). The
    speed code lives there, one named place per plugin, tested equal to the plain functions
    (tests/scheduler_plugins/scheduler/test_vector_paths.py); the framework runs without it
    (`Framework.batch = False`), and a plugin without one is asked node by node."""
    return getattr(plugin, "vector", None)


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


@runtime_checkable
class PreBindExtensions(Protocol):
    """Koordinator: turn every PreBind modification into one patch; first non-Skip ends the chain."""

    name: str

    def apply_patch(self, state: CycleState, original: dict[str, Any], modified: dict[str, Any]) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class NodeDetailPlugin(Protocol):
    """Optional, for `explain`: what the plugin would allocate to the pod on a feasible node (the
    CPUs, the devices), or None. Called after Filter passed; must not change anything."""

    name: str

    def explain_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> dict[str, Any] | None: ...


# --- FrameworkExtender transformers (pkg/scheduler/frameworkext/interface.go) ---------------------


@runtime_checkable
class BeforePreFilterTransformer(Protocol):
    def before_pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PodInfo, bool, Status]: ...


@runtime_checkable
class AfterPreFilterTransformer(Protocol):
    def after_pre_filter(self, state: CycleState, pod: PodInfo, result: PreFilterResult | None) -> Status: ...


@runtime_checkable
class BeforeFilterTransformer(Protocol):
    def before_filter(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[PodInfo, NodeInfo, bool, Status]: ...


@runtime_checkable
class BeforeScoreTransformer(Protocol):
    def before_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
    ) -> tuple[PodInfo, list[NodeInfo], bool, Status]: ...


@runtime_checkable
class AfterPostFilterTransformer(Protocol):
    def after_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], post_filter_status: Status
    ) -> None: ...


@runtime_checkable
class WarmUpPlugin(Protocol):
    """Optional: build what the plugin would otherwise build on its first cycle (the per-node rows
    of its batch forms) from the cluster as it is now. A long-running server calls it once the
    cluster is loaded, so the first request does not pay for it and what it builds is long-lived
    from the start (frozen out of the garbage collector's sweeps with the rest of the snapshot)."""

    def warm_up(self) -> None: ...


# --- what the framework needs of the cluster state ----------------------------------------------


@runtime_checkable
class ClusterListener(Protocol):
    """A plugin that keeps its own cache of cluster objects (informer event handlers): subscribed to
    the cluster state by the framework, told about every change after a replay of the current state."""

    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None: ...

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None: ...

    def on_node_metric(self, node_name: str, metric: dict[str, Any] | None) -> None: ...


@runtime_checkable
class ReservationListener(Protocol):
    """A plugin that tracks what each Available Reservation holds on its node (Koordinator's
    reservation event handlers of NodeNUMAResource and DeviceShare): `reserve_pod` is the held
    entry (the reserve pod with the Reservation's annotations, `resource-status` and
    `device-allocated` included, requesting what the reservation still holds). `on_reservation_held`
    is called again whenever that changes; `on_reservation_released` once it stops holding."""

    def on_reservation_held(self, reserve_pod: PodInfo, node_name: str) -> None: ...

    def on_reservation_released(self, reserve_pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class NominateReservationFilterPlugin(Protocol):
    """Koordinator's `frameworkext.NominateReservationFilterPlugin`: whether the reservation can
    serve the pod on the node by this plugin's own resources (the CPUs, the cards it holds). The
    Reservation plugin asks every Filter plugin implementing it before it nominates a reservation
    (the Filter plugins restore the matched reservations in their own Filter)."""

    name: str

    def filter_nominate_reservation(
        self, state: CycleState, pod: PodInfo, info: ReservationInfo, node: NodeInfo
    ) -> Status: ...


@runtime_checkable
class PodListener(Protocol):
    """A plugin that follows every live pod, pending ones included (ElasticQuota's request counts
    pods not scheduled yet). `on_pod_added` is called again when a pod changes (bound, patched);
    `on_pod_removed` when it is deleted or finishes. Both are idempotent."""

    def on_pod_added(self, pod: PodInfo) -> None: ...

    def on_pod_removed(self, key: str) -> None: ...


@runtime_checkable
class ObjectListener(Protocol):
    """A plugin that follows cluster objects of other kinds (ElasticQuota, Device,
    NodeResourceTopology): `obj` is None when the object was deleted."""

    listened_kinds: frozenset[str]

    def on_object(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> None: ...


class ReservationView(Protocol):
    """The Reservations of the cluster state (`cluster.reservations.ReservationIndex`), as the
    Reservation plugin reads and updates them."""

    infos: dict[str, ReservationInfo]
    by_node: dict[str, set[str]]
    #: reservation name -> pod key -> the requests that pod takes from it
    allocations: dict[str, dict[str, Vector]]

    def candidates(self, pod: PodInfo) -> list[ReservationInfo]:
        """Holding reservations whose owners might match the pod (a superset), by name."""
        ...

    def matchable(self, info: ReservationInfo) -> bool: ...

    def allocated(self, name: str) -> Vector: ...

    def remaining(self, info: ReservationInfo) -> Vector: ...

    def allocated_pods(self, name: str) -> int:
        """How many pods use the reservation (its `pods` limit)."""
        ...

    def allocate(self, name: str, pod: PodInfo) -> None:
        """Count the pod as using the reservation (Reserve); idempotent."""
        ...

    def release(self, name: str, pod_key: str) -> None:
        """Undo `allocate` (Unreserve); a pod never allocated is a no-op."""
        ...

    def expire(self, now: float) -> list[str]:
        """Stop holding the capacity of reservations expired at `now`; their names."""
        ...


class ClusterView(Protocol):
    """The scheduler's cluster state as the framework, its plugins and the scheduling loop use it
    (kube-scheduler's cache and snapshot); `cluster.state.ClusterState` implements it.

    `by_index` holds the nodes by table index (deleted nodes leave an empty slot) and `generations`
    a counter per index bumped on every change to that node, for batch plugins to refresh only the
    rows that changed."""

    @property
    def by_index(self) -> Sequence[NodeInfo]: ...

    @property
    def generations(self) -> npt.NDArray[np.int64]: ...

    @property
    def reservations(self) -> ReservationView: ...

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """Every node by name."""
        ...

    @property
    def pending(self) -> dict[str, PodInfo]:
        """Pods (and reserve pods) not bound yet, by key."""
        ...

    @property
    def tracks_pending(self) -> bool:
        """Whether `pending` holds every pending pod of the cluster (not so behind the extender)."""
        ...

    @property
    def pod_groups(self) -> dict[str, dict[str, Any]]:
        """PodGroup objects by `namespace/name`."""
        ...

    def node_list(self) -> list[NodeInfo]:
        """Every node, sorted by name."""
        ...

    def disruption_budgets(self) -> list[dict[str, Any]]:
        """The cluster's PodDisruptionBudgets (what preemption weighs its victims against)."""
        ...

    def touch(self, name: str) -> None:
        """Something derived from this node changed (a plugin's cache entry): bump its generation."""
        ...

    def subscribe(self, listener: object) -> None:
        """Subscribe a `ClusterListener`, `PodListener` or `ObjectListener` (or several in one)."""
        ...

    def allocatable_total(self) -> dict[str, int]:
        """Σ allocatable of every node (what the top-level ElasticQuotas share)."""
        ...

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Count the pod on the node before binding finishes (AssumePod)."""
        ...

    def forget(self, pod: PodInfo, node_name: str) -> None:
        """Undo `assume` after a failure in the binding cycle (ForgetPod)."""
        ...


#: Every extension point a profile can enable, in KubeSchedulerConfiguration spelling, with the
#: protocol a plugin enabled there must implement.
EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}

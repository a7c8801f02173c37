"""kube-scheduler's scheduling queue, for a scheduler that passes over its pending pods repeatedly
(`colocate whatif`'s steps): which pending pods are attempted in a pass.

As kube-scheduler's `PriorityQueue` (pkg/scheduler/internal/queue/scheduling_queue.go):

- a new pod is active (attempted at the next pass);
- a pod a cycle found unschedulable is parked (`unschedulablePods`) with the plugins that rejected
  it, and moved back only by a cluster event one of those plugins registers (`EventsToRegister`,
  `MoveAllToActiveOrBackoffQueue` with `podMatchesEvent`), or when it has been parked longer than
  `podMaxInUnschedulablePodsDuration` (5 minutes, `flushUnschedulablePodsLeftover`);
- a pod moved back, or one whose cycle failed with an error, or one a cluster event may have helped
  while its cycle ran (`moveRequestCycle >= schedulingCycle`), waits out its backoff:
  `podInitialBackoffSeconds` (1 s) doubled per attempt, at most `podMaxBackoffSeconds` (10 s).

A plugin without registered events (an out-of-tree plugin) is moved by every event, as
kube-scheduler treats a plugin that does not implement `EnqueueExtensions` (`WildCardEvent`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import (
    DEVICE_KIND,
    ELASTIC_QUOTA_KIND,
    NODE_RESOURCE_TOPOLOGY_KIND,
    POD_GROUP_KIND,
    RESERVATION_KIND,
)
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.objects import metadata_of, node_name_of, spec_of, status_of
from scheduler_plugins.scheduler.framework.status import Code, Status

#: kube-scheduler's defaults (KubeSchedulerConfiguration v1)
POD_INITIAL_BACKOFF_SECONDS: Final = 1.0
POD_MAX_BACKOFF_SECONDS: Final = 10.0
POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION: Final = 300.0

# framework.ActionType: the kinds of change a cluster event is
ADD: Final = 1
DELETE: Final = 2
UPDATE_NODE_ALLOCATABLE: Final = 4
UPDATE_NODE_LABEL: Final = 8
UPDATE_NODE_TAINT: Final = 16
UPDATE_NODE_CONDITION: Final = 32
UPDATE_OTHER: Final = 64
UPDATE: Final = UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION | UPDATE_OTHER
ALL: Final = ADD | DELETE | UPDATE

#: a cluster event: the resource (kind) and its action
ClusterEvent = tuple[str, int]

#: `EventsToRegister` of the plugins that reject pods, by plugin name (kube-scheduler's
#: noderesources/fit.go; Koordinator's pkg/scheduler/plugins/loadaware/load_aware.go registers
#: NodeMetric add, update and delete). A plugin not listed is moved by every event.
EVENTS_TO_REGISTER: Final[Mapping[str, tuple[ClusterEvent, ...]]] = {
    "NodeResourcesFit": (("Pod", DELETE), ("Node", ADD | UPDATE)),
    "LoadAwareScheduling": ((NODE_METRIC_KIND, ALL),),
}

#: the kinds whose changes are cluster events (what kube-scheduler's event handlers watch)
EVENT_KINDS: Final = frozenset(
    {
        "Node",
        "Pod",
        NODE_METRIC_KIND,
        ELASTIC_QUOTA_KIND,
        DEVICE_KIND,
        NODE_RESOURCE_TOPOLOGY_KIND,
        POD_GROUP_KIND,
        RESERVATION_KIND,
        "PodDisruptionBudget",
    }
)


@dataclass
class QueuedPod:
    """kube-scheduler's `QueuedPodInfo`: the attempts, the last one's time and outcome."""

    attempts: int = 0
    last_attempt: float = 0.0
    #: parked in unschedulablePods (moved back by a matching event or the flush)
    parked: bool = False
    #: per resource, the actions that may make the pod fit; `wildcard`: any event
    interests: dict[str, int] = field(default_factory=dict)
    wildcard: bool = False
    #: the last attempt's placement, reported while the pod waits
    last: Any = None

    def backoff(self) -> float:
        seconds: float = POD_INITIAL_BACKOFF_SECONDS * (1 << min(max(self.attempts - 1, 0), 16))
        return min(seconds, POD_MAX_BACKOFF_SECONDS)


def rejecting_plugins(status: Status, failed_nodes: Mapping[str, Status]) -> set[str]:
    """The plugins that rejected the pod (`Diagnosis.UnschedulablePlugins`)."""
    plugins = {s.plugin for s in failed_nodes.values() if s.is_rejected}
    if status.is_rejected and status.plugin:
        plugins.add(status.plugin)
    plugins.discard("")
    return plugins


class SchedulingQueue:
    """Which pending pods a pass attempts; told of cluster events as a store index."""

    def __init__(self) -> None:
        self.pods: dict[str, QueuedPod] = {}
        self.cycle = 0
        self.move_request_cycle = -1
        #: events already applied to the parked pods since one was last parked (a repeat moves none)
        self._applied: set[ClusterEvent] = set()

    # --- what a pass attempts ----------------------------------------------------------------
    def ready(self, key: str, now: float) -> bool:
        """Whether the pending pod is attempted at `now`: new, or out of unschedulablePods (by an
        event or the flush) and past its backoff."""
        entry = self.pods.get(key)
        if entry is None:
            return True
        if entry.parked:
            if now - entry.last_attempt <= POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION:
                return False
            entry.parked = False  # flushUnschedulablePodsLeftover
        return now >= entry.last_attempt + entry.backoff()

    def attempted(
        self, key: str, status: Status, failed_nodes: Mapping[str, Status], placement: Any, now: float
    ) -> None:
        """A cycle of the pod ended with `status` (not placed): where it waits now."""
        entry = self.pods.setdefault(key, QueuedPod())
        entry.attempts += 1
        entry.last_attempt, entry.last = now, placement
        if status.code is Code.Wait:  # waiting on Permit: not the queue's
            entry.parked = False
            return
        plugins = rejecting_plugins(status, failed_nodes)
        helped = self.move_request_cycle >= self.cycle  # an event came while its cycle ran
        if status.code is Code.Error or not plugins or helped:
            entry.parked = False
            return
        entry.interests, entry.wildcard = _interests(plugins)
        entry.parked = True
        self._applied.clear()

    def begin_cycle(self) -> None:
        """A cycle starts: events from now on may help its pod (`schedulingCycle`)."""
        self.cycle += 1

    def waiting(self, pending: Iterable[str]) -> list[Any]:
        """The last placements of the pending pods not attempted (kube-scheduler leaves their
        PodScheduled condition as the last cycle wrote it); forgets the pods no longer pending."""
        keep = set(pending)
        for key in [k for k in self.pods if k not in keep]:
            del self.pods[key]
        return [e.last for e in self.pods.values() if e.last is not None]

    # --- cluster events ------------------------------------------------------------------------
    def event(self, event: ClusterEvent) -> None:
        """`MoveAllToActiveOrBackoffQueue`: the parked pods that a plugin of theirs registered this
        event for move back (they wait out their backoff)."""
        self.move_request_cycle = self.cycle
        if event in self._applied:
            return
        self._applied.add(event)
        resource, action = event
        for entry in self.pods.values():
            if entry.parked and (entry.wildcard or entry.interests.get(resource, 0) & action):
                entry.parked = False

    def object_put(
        self, kind: str, key: Any, obj: Mapping[str, Any], old: Mapping[str, Any] | None, source: str
    ) -> None:
        if kind not in EVENT_KINDS:
            return
        if kind == "Pod":
            action = _pod_action(obj, old)
        elif kind == "Node":
            action = ADD if old is None else _node_update(obj, old)
        else:
            action = ADD if old is None else UPDATE_OTHER
        if action:
            self.event((kind, action))

    def object_deleted(self, kind: str, key: Any, old: Mapping[str, Any]) -> None:
        if kind in EVENT_KINDS and (kind != "Pod" or node_name_of(old or {})):
            self.event((kind, DELETE))

    def changes_applied(self) -> None:
        """Every event is applied as it comes."""


def _interests(plugins: set[str]) -> tuple[dict[str, int], bool]:
    interests: dict[str, int] = {}
    for plugin in plugins:
        events = EVENTS_TO_REGISTER.get(plugin)
        if events is None:
            return {}, True
        for resource, action in events:
            interests[resource] = interests.get(resource, 0) | action
    return interests, False


def _pod_action(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> int:
    """An assigned pod's event: added (bound), deleted when it finished, else updated; an
    unassigned pod's change is no cluster event."""
    if not node_name_of(obj or {}):
        return 0
    if status_of(obj).get("phase") in ("Succeeded", "Failed"):
        return DELETE
    return ADD if not node_name_of(old or {}) else UPDATE_OTHER


def _node_update(obj: Mapping[str, Any], old: Mapping[str, Any]) -> int:
    """kube-scheduler's `nodeSchedulingPropertiesChange`: the node update events a change is."""
    spec, old_spec = spec_of(obj), spec_of(old)
    status, old_status = status_of(obj), status_of(old)
    action = 0
    if spec.get("unschedulable") != old_spec.get("unschedulable"):
        action |= UPDATE_OTHER
    if status.get("allocatable") != old_status.get("allocatable"):
        action |= UPDATE_NODE_ALLOCATABLE
    if metadata_of(obj).get("labels") != metadata_of(old).get("labels"):
        action |= UPDATE_NODE_LABEL
    if spec.get("taints") != old_spec.get("taints"):
        action |= UPDATE_NODE_TAINT
    if _conditions(status) != _conditions(old_status):
        action |= UPDATE_NODE_CONDITION
    return action


def _conditions(status: Mapping[str, Any]) -> dict[str, Any]:
    """Conditions by type and status (their heartbeat times are no change)."""
    return {c.get("type"): c.get("status") for c in status.get("conditions") or ()}

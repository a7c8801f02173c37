"""The scheduling loop for one pod (kube-scheduler's `schedulingCycle` + `bindingCycle`): the
production loop of `colocate scheduler simulate`, and the node selection `explain` reports.

Node sampling follows kube-scheduler's `percentageOfNodesToScore` (pkg/scheduler/schedule_one.go,
numFeasibleNodesToFind): the profile's value when it sets one, else the configuration's; with 0
(adaptive, the default) a cluster of n ≥ 100 nodes is searched for max(100, n × max(5, 50 − n/125) /
100) feasible nodes, starting where the previous cycle stopped (nextStartNodeIndex). Ties between
equal totals go to the lowest node name (kube-scheduler's `selectHost` picks among equal totals at
random; a fixed order keeps simulations repeatable).

A pod that preempted is nominated to the node (kube's PodNominator, `framework/nominator.py`) until
it is assumed there; so is a pending pod read with `status.nominatedNodeName`. Every other pod's
Filter counts the nominated pods of equal or higher priority on their node, so the room freed for
the preemptor is not taken by a lower-priority pod in the meantime.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler_plugins.scheduler.framework.cycle_state import (
    PREFERRED_NODES,
    PREFILTER_REJECTED_BY,
    RESERVED_RESERVATION,
    CycleState,
)
from scheduler_plugins.scheduler.framework.guard import PluginRaised
from scheduler_plugins.scheduler.framework.interfaces import ClusterView
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.nominator import nominated_node_of
from scheduler_plugins.scheduler.framework.preemption import PREEMPTION_CANDIDATE
from scheduler_plugins.scheduler.framework.runtime import Framework
from scheduler_plugins.scheduler.framework.status import SUCCESS, Code, Status, unschedulable
from scheduler_plugins.scheduler.podinfo import PodInfo

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, total: int) -> int:
    """How many feasible nodes a cycle looks for before it stops filtering (numFeasibleNodesToFind)."""
    if total < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return total
    if percentage == 0:
        percentage = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - total // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, total * percentage // 100)


def failure_message(total: int, statuses: dict[str, Status]) -> str:
    """kube-scheduler's FitError text: `0/3 nodes are available: 2 Insufficient cpu, 1 ...`."""
    counts: Counter[str] = Counter()
    for status in statuses.values():
        for reason in status.reasons or (status.code.name,):
            counts[reason] += 1
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"0/{total} nodes are available: {parts}." if parts else f"0/{total} nodes are available."


def select_host(nodes: list[NodeInfo], totals: Sequence[int] | npt.NDArray[np.int64]) -> int:
    """Index of the highest total; equal totals go to the lowest node name."""
    values = np.asarray(totals)
    best = np.flatnonzero(values == values.max()).tolist()
    if len(best) == 1:
        return int(best[0])
    names = [nodes[i].name for i in best]  # (often hundreds of ties: no key function per item)
    return int(best[names.index(min(names))])


@dataclass
class Placement:
    pod: str
    node: str = ""
    status: Status = SUCCESS
    message: str = ""
    score: int | None = None
    #: the reservation the pod consumed, if any
    reservation: str = ""
    #: the Permit plugins the pod waited on (a gang member), "" if it did not wait
    waited_on: str = ""
    failed_nodes: dict[str, Status] = field(default_factory=dict)
    #: the node a PostFilter plugin preempted on, the plugin, and the pods it deleted there
    nominated_node: str = ""
    preempted_by: str = ""
    victims: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scheduled(self) -> bool:
        return bool(self.node) and self.status.is_success

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "node": self.node or None, "code": self.status.code.name}
        if self.waited_on:
            out["waitedOnPermit"] = self.waited_on
        if self.scheduled:
            out["score"] = self.score
            if self.reservation:
                out["reservation"] = self.reservation
        else:
            out["message"] = self.message
            out["reasons"] = {name: s.message or s.code.name for name, s in sorted(self.failed_nodes.items())}
        if self.nominated_node:
            out["nominatedNode"] = self.nominated_node
        if self.preempted_by:
            out["preemptedBy"] = self.preempted_by
            out["victims"] = self.victims
        return out


class Scheduler:
    """Schedules one pod at a time with one profile's framework over the cluster state, walking the
    nodes from where the previous cycle stopped."""

    def __init__(self, framework: Framework, cluster: ClusterView, percentage_of_nodes_to_score: int = 0) -> None:
        self.framework = framework
        self.cluster = cluster
        own = framework.profile.percentage_of_nodes_to_score
        self.percentage = percentage_of_nodes_to_score if own is None else own
        self.next_start_node_index = 0
        #: placements of the pods parked by Permit, updated when they settle
        self.waiting: dict[str, Placement] = {}

    def _find_feasible(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, Status]]:
        total = len(nodes)
        if not total:
            return [], {}
        start = self.next_start_node_index % total
        feasible, failed, processed = self.framework.find_feasible(
            state, pod, nodes, num_feasible_nodes_to_find(self.percentage, total), start
        )
        self.next_start_node_index = (start + processed) % total
        return feasible, failed

    def nominate_pending(self, pods: Sequence[PodInfo]) -> None:
        """Nominate every pod read with `status.nominatedNodeName` (kube's queue does so as pods are
        added), before any of them is scheduled."""
        nominator = self.framework.handle.nominator
        for pod in pods:
            node_name = nominated_node_of(pod)
            if node_name and not nominator.node_of(pod.key):
                nominator.add(pod, node_name)

    def schedule_one(self, pod: PodInfo) -> Placement:
        """One scheduling cycle; a pod that waits on Permit gets a placement with code Wait that
        is updated in place when it is allowed or rejected."""
        if self.waiting:
            self.expire_waiting()
        try:
            placement = self._cycle(pod)
        except PluginRaised as raised:  # an out-of-tree plugin's exception: its Status is Error
            status = raised.status()
            placement = Placement(pod.key, status=status, message=f"{status.plugin}: {status.message}")
        if self.waiting:
            self.settle_waiting()
        if not placement.node:  # still pending: say where it is promised room, if anywhere
            placement.nominated_node = placement.nominated_node or self.framework.handle.nominator.node_of(pod.key)
        return placement

    def _cycle(self, pod: PodInfo, nominated: str = "") -> Placement:
        """One attempt; `nominated` is the node a preemption just made room on: the retry tries
        it first and takes it when it fits (kube-scheduler's evaluateNominatedNode)."""
        fwk = self.framework
        state = CycleState()
        all_nodes = self.cluster.node_list()
        status = fwk.run_pre_enqueue(pod)
        if not status.is_success:
            return Placement(pod.key, status=status, message=f"pre-enqueue: {status.message}")
        pod, result, status = fwk.run_pre_filter(state, pod)
        if not status.is_success:
            failed = {n.name: status for n in all_nodes}
            state.write(PREFILTER_REJECTED_BY, status.plugin)
            return self._post_filter(state, pod, status, failed, len(all_nodes), nominated)
        nodes = all_nodes
        if result is not None and result.node_names is not None:
            nodes = [n for n in all_nodes if n.name in result.node_names]
        if nominated and nominated in self.cluster.nodes and any(n.name == nominated for n in nodes):
            fits, _, _ = fwk.find_feasible(state, pod, [self.cluster.nodes[nominated]])
            if fits:
                return self._reserve_and_bind(state, pod, nominated, None)
        feasible, failed = self._find_feasible(state, pod, nodes)
        preferred = state.read(PREFERRED_NODES)
        if preferred:
            feasible, failed = self._add_preferred(state, pod, preferred, nodes, feasible, failed)
        if not feasible:
            return self._post_filter(state, pod, unschedulable(), failed, len(all_nodes), nominated)
        chosen, score, status = self._select(state, pod, feasible)
        if not status.is_success:
            return Placement(pod.key, status=status, message=status.message)
        return self._reserve_and_bind(state, pod, chosen, score)

    def _post_filter(
        self, state: CycleState, pod: PodInfo, status: Status, failed: dict[str, Status], total: int, nominated: str
    ) -> Placement:
        """PostFilter for a pod no node accepted; when a plugin preempted, the pod is attempted
        again at once (its victims are gone), as kube-scheduler's next cycle would. That attempt
        does not preempt again: the pod stays nominated and waits (kube-scheduler's next cycle
        would find its victims still terminating, or room the plugins see only once they update,
        such as LoadAwareScheduling's NodeMetric)."""
        if nominated:
            return Placement(pod.key, status=status, message=failure_message(total, failed), failed_nodes=failed)
        result, post = self.framework.run_post_filter(state, pod, failed)
        candidate = state.read(PREEMPTION_CANDIDATE)
        if post.is_success and result is not None and result.nominated_node:
            self.framework.handle.nominator.add(pod, result.nominated_node)
            placement = self._cycle(pod, result.nominated_node)
            placement.nominated_node, placement.preempted_by = result.nominated_node, post.plugin
            if candidate is not None:
                placement.victims = [{**v.as_dict(), "node": candidate.node} for v in candidate.victims]
            return placement
        message = failure_message(total, failed)
        if post.code is Code.Error:
            message += f" {post.plugin}: {post.message}"
        return Placement(pod.key, status=status, message=message, failed_nodes=failed)

    def _add_preferred(
        self,
        state: CycleState,
        pod: PodInfo,
        names: tuple[str, ...],
        candidates: list[NodeInfo],
        feasible: list[NodeInfo],
        failed: dict[str, Status],
    ) -> tuple[list[NodeInfo], dict[str, Status]]:
        """The preferred nodes (PREFERRED_NODES) that sampling did not reach, filtered and added."""
        seen = {n.name for n in feasible} | set(failed)
        allowed = {n.name for n in candidates} if len(candidates) != len(self.cluster.nodes) else None
        extra = [
            self.cluster.nodes[name]
            for name in names
            if name not in seen and name in self.cluster.nodes and (allowed is None or name in allowed)
        ]
        if not extra:
            return feasible, failed
        more, more_failed, _ = self.framework.find_feasible(state, pod, extra)
        return feasible + more, {**failed, **more_failed}

    def _select(self, state: CycleState, pod: PodInfo, feasible: list[NodeInfo]) -> tuple[str, int | None, Status]:
        if len(feasible) == 1:
            return feasible[0].name, None, SUCCESS
        status = self.framework.run_pre_score(state, pod, feasible)
        if not status.is_success:
            return "", None, status
        table, status = self.framework.run_score(state, pod, feasible)
        if not status.is_success:
            return "", None, status
        best = select_host(feasible, table.total_array if len(table.total_array) else table.totals)
        return feasible[best].name, table.totals[best], SUCCESS

    def _reserve_and_bind(self, state: CycleState, pod: PodInfo, node_name: str, score: int | None) -> Placement:
        self.cluster.assume(pod, node_name)
        self.framework.handle.nominator.delete(pod.key)  # assumed: its room is counted on the node
        try:
            return self._reserve_and_bind_assumed(state, pod, node_name, score)
        except PluginRaised:
            self.waiting.pop(pod.key, None)
            self.cluster.forget(pod, node_name)
            raise

    def _reserve_and_bind_assumed(
        self, state: CycleState, pod: PodInfo, node_name: str, score: int | None
    ) -> Placement:
        status = self.framework.run_reserve_permit(state, pod, node_name)
        if status.code is Code.Wait:  # parked, assumed on the node; settled by a later cycle or its deadline
            placement = Placement(
                pod.key, node=node_name, status=status, message=status.message, score=score, waited_on=status.plugin
            )
            self.waiting[pod.key] = placement
            return placement
        if status.is_success:
            status = self.framework.run_binding_cycle(state, pod, node_name)
        if not status.is_success:
            self.cluster.forget(pod, node_name)
            return Placement(pod.key, status=status, message=f"{status.plugin}: {status.message}")
        return Placement(pod.key, node=node_name, score=score, reservation=state.read(RESERVED_RESERVATION) or "")

    # --- pods waiting on Permit -------------------------------------------------------------------
    def settle_waiting(self) -> None:
        """Run the binding cycle of every waiting pod that was allowed, unreserve and forget every
        one rejected, and update their placements. Rejections may settle more pods (a gang)."""
        waiting = self.framework.handle.waiting
        while True:
            settled = [w for w in waiting if w.outcome is not None]
            if not settled:
                return
            for item in settled:
                status = self.framework.finish_waiting(item)
                placement = self.waiting.pop(item.pod.key, None) or Placement(item.pod.key)
                placement.status = status
                if status.is_success:
                    placement.message = ""
                    placement.reservation = item.state.read(RESERVED_RESERVATION) or ""
                else:
                    self.cluster.forget(item.pod, item.node_name)
                    placement.node, placement.score = "", None
                    placement.message = f"{status.plugin}: {status.message}"

    def expire_waiting(self, now: float | None = None) -> None:
        """Apply the Permit deadlines at `now` (the handle's clock when None), then settle."""
        self.framework.handle.waiting.expire(self.framework.handle.clock() if now is None else now)
        self.settle_waiting()

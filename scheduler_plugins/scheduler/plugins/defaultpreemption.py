"""DefaultPreemption: a PostFilter that evicts lower-priority pods so an unschedulable pod fits
(kube-scheduler's `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`; tests
`TestPostFilter`, `TestSelectBestCandidate`, `TestPodEligibleToPreemptOthers`).

Koordinator's priority semantics: a pod's priority is `spec.priority`, else the default value of its
`koordinator.sh/priority-class` (koord-prod 9500 > koord-mid 7500 > koord-batch 5500 > koord-free
3500), so a prod pod displaces mid, batch and free pods and never another prod pod of its priority.
A pod may be a victim only when its priority is strictly lower; reserve pods (Reservations,
priority MaxInt32) never are. Victims whose eviction would violate a PodDisruptionBudget are the
last chosen (see `framework/preemption.py`). Args `minCandidateNodesPercentage` (10) and
`minCandidateNodesAbsolute` (100) bound how many candidate nodes are evaluated, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.field_errors import ConfigError, Fields, check_range
from policies.apis.objects import status_of
from scheduler_plugins.scheduler.framework.cycle_state import PREFILTER_REJECTED_BY, CycleState
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.interfaces import PostFilterResult
from scheduler_plugins.scheduler.framework.nominator import nominated_node_of
from scheduler_plugins.scheduler.framework.preemption import (
    PREEMPT_NEVER,
    PREEMPTION_CANDIDATE,
    Candidate,
    Evaluator,
    ExtraFit,
)
from scheduler_plugins.scheduler.framework.status import SUCCESS, Code, Status, error, unresolvable
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import is_reserve_pod

NAME = "DefaultPreemption"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE


def parse_args(raw: Mapping[str, Any] | None, path: str) -> DefaultPreemptionArgs:
    """`DefaultPreemptionArgs` (ValidateDefaultPreemptionArgs: percentage 0..100, absolute ≥ 0, not both 0)."""
    fields = Fields(raw, path)
    percentage = fields.int("minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE)
    absolute = fields.int("minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)
    check_range(fields.at("minCandidateNodesPercentage"), percentage, 0, 100)
    if absolute < 0:
        raise ConfigError(fields.at("minCandidateNodesAbsolute"), f"not in valid range [0, inf), got {absolute}")
    if percentage == 0 and absolute == 0:
        raise ConfigError(
            fields.at("minCandidateNodesAbsolute"),
            "cannot be zero at the same time as minCandidateNodesPercentage",
        )
    return DefaultPreemptionArgs(percentage, absolute)


def num_candidates(args: DefaultPreemptionArgs, nodes: int) -> int:
    """`calculateNumCandidates`: percentage of the nodes, at least the absolute, at most all."""
    n = nodes * args.min_candidate_nodes_percentage // 100
    return min(max(n, args.min_candidate_nodes_absolute), nodes)


def preemption_disallowed(pod: PodInfo) -> str:
    """Why the pod may not preempt at all (`PodEligibleToPreemptOthers`), or "". A Reservation's
    reserve pod (priority MaxInt32) never does: Koordinator lets reservations preempt only with the
    Reservation plugin's `enablePreemption` (default false), and a migration's Reservation that
    evicted pods to fit would break its promise to evict nothing until it is placed."""
    if pod.spec.get("preemptionPolicy") == PREEMPT_NEVER:
        return "not eligible due to preemptionPolicy=Never."
    if is_reserve_pod(pod):
        return "not eligible: a reserve pod does not preempt (Reservation enablePreemption is false)"
    return ""


#: The pod condition kube-scheduler sets on a victim before deleting it, and its reason.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def terminating_by_preemption(pod: PodInfo) -> bool:
    """`podTerminatingByPreemption`: being deleted, and marked as a preemption's victim."""
    if not pod.metadata.get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == DISRUPTION_TARGET and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
        for c in status_of(pod.obj).get("conditions") or ()
    )


class PreemptingPlugin:
    """What DefaultPreemption and ElasticQuota's PostFilter share: run the evaluator, delete the
    victims through the API, nominate the node; and the dry run `explain` shows."""

    name = ""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    # --- PreemptionPolicy ----------------------------------------------------------------------
    def eligible(self, pod: PodInfo) -> tuple[bool, str]:
        why = preemption_disallowed(pod)
        return not why, why

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        return victim.priority < pod.priority

    def num_candidates(self, nodes: int) -> int:
        return nodes

    def extra_fit(self, state: CycleState) -> ExtraFit | None:
        return None

    def prepare_state(self, state: CycleState, pod: PodInfo) -> tuple[CycleState, Status]:
        """The state victims are filtered with. A pod PreFilter rejected is not helped by evicting
        pods from nodes (kube-scheduler's PreFilter failure is not a node's); ElasticQuota, whose
        own rejection it is, re-runs PreFilter without its check."""
        rejected_by = state.read(PREFILTER_REJECTED_BY)
        if rejected_by:
            return state, unresolvable(f"preemption cannot help: PreFilter plugin {rejected_by} rejected the pod")
        return state, SUCCESS

    def victims_still_terminating(self, pod: PodInfo, statuses: Mapping[str, Status]) -> str:
        """`PodEligibleToPreemptOthers`' second half: a pod nominated to a node where a
        lower-priority victim of a preemption is still terminating waits for it instead of
        preempting again (unless Filter now finds that node unresolvable). The reason, or ""."""
        node_name = self.handle.nominator.node_of(pod.key) or nominated_node_of(pod)
        if not node_name:
            return ""
        status = statuses.get(node_name)
        if status is not None and status.code is Code.UnschedulableAndUnresolvable:
            return ""
        node = self.handle.cluster.nodes.get(node_name)
        if node is None:
            return ""
        for other in node.pods.values():
            if other.priority < pod.priority and terminating_by_preemption(other):
                return "not eligible due to a terminating pod on the nominated node."
        return ""

    # --- PostFilter ------------------------------------------------------------------------------
    def _evaluator(self, state: CycleState) -> Evaluator:
        cluster = self.handle.cluster
        filtering = self.handle.filtering
        assert filtering is not None, "the Framework sets handle.filtering"
        return Evaluator(self.name, self, filtering, cluster.nodes, cluster.disruption_budgets(), self.extra_fit(state))

    def select(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[Candidate | None, list[Candidate], Status]:
        waiting = self.victims_still_terminating(pod, statuses)
        if waiting:
            return None, [], unresolvable(waiting)
        filter_state, status = self.prepare_state(state, pod)
        if not status.is_success:
            return None, [], status
        return self._evaluator(filter_state).select_candidate(filter_state, pod, statuses)

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        chosen, _, status = self.select(state, pod, statuses)
        if chosen is None:
            return None, status
        for victim in chosen.victims:
            try:
                self.handle.client.delete_pod(
                    victim.pod.namespace, victim.pod.name, str(victim.pod.metadata.get("uid") or "")
                )
            except ClientError as exc:
                if exc.code != 404:  # already gone is what we wanted
                    return None, error(f"deleting preemption victim {victim.pod.key}: {exc}")
        state.write(PREEMPTION_CANDIDATE, chosen)
        return PostFilterResult(chosen.node), SUCCESS

    def explain_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> dict[str, Any] | None:
        chosen, candidates, status = self.select(state, pod, statuses)
        out: dict[str, Any] = {"plugin": self.name, "nominatedNode": chosen.node if chosen else None}
        if chosen is None:
            out["message"] = status.message
        out["candidates"] = [c.as_dict() for c in candidates]
        return out


class DefaultPreemption(PreemptingPlugin):
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        super().__init__(handle)
        self.args = args

    def num_candidates(self, nodes: int) -> int:
        return num_candidates(self.args, nodes)


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args or DefaultPreemptionArgs(), handle)

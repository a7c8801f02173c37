"""Preemption's evaluator, shared by every PostFilter plugin that preempts (kube-scheduler's
`pkg/scheduler/framework/preemption/preemption.go`, `Evaluator.Preempt`).

A plugin supplies a `PreemptionPolicy` (kube's `preemption.Interface`): who may preempt, who may be
a victim, how many candidate nodes to try. The evaluator does the rest, as upstream:

1. nodes where preemption might help: those whose Filter status is `Unschedulable` (not
   `UnschedulableAndUnresolvable`, and not outside the PreFilter result);
2. on each candidate (`SelectVictimsOnNode`): remove every pod the policy lets the preemptor
   preempt, check the pod fits with Filter; then, highest priority first, give back
   (`reprieve`) first the victims whose eviction would violate a PodDisruptionBudget, then the
   others, keeping each one whose return still lets the pod fit;
3. pick one node (`pickOneNodeForPreemption`): fewest PDB violations, then the lowest
   highest-victim priority, the lowest sum of priorities, the fewest victims, the latest start
   of the highest-priority victims, then the lowest node name;
4. delete the victims through the API (`PrepareCandidate`) and nominate the node.

Every victim carries the reason it was chosen, for `simulate -o json` and `explain`. The dry run
(`select_candidate`) deletes nothing. Victims are removed from a copy of the NodeInfo and, on a
clone of the CycleState, from every plugin with PreFilter extensions (`RemovePod`; a reprieved
victim comes back with `AddPod`), as kube's SelectVictimsOnNode does: NodeNUMAResource's CPUs,
DeviceShare's GPUs, LoadAwareScheduling's usage and ElasticQuota's used follow the victims. Filter
counts the pods nominated to the node (`RunFilterPluginsWithNominatedPods`). A policy's `extra_fit`
is checked after Filter passes, on the same adjusted state (ElasticQuota: the quota's used, less
its victims, plus the pod).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from policies.apis.disruption import selector_of, status_allowed
from policies.apis.objects import status_of
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import PodFilter
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import SUCCESS, Code, Status, unresolvable, unschedulable
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import is_reserve_pod

#: CycleState key: the `Candidate` a PostFilter plugin preempted for (read by the scheduling loop).
PREEMPTION_CANDIDATE = "frameworkext/preemption-candidate"
#: `spec.preemptionPolicy` that forbids a pod to preempt (PreemptNever).
PREEMPT_NEVER = "Never"


@dataclass(frozen=True, slots=True)
class Victim:
    pod: PodInfo
    #: why it was chosen: its priority against the preemptor's, whether a budget protects it
    reason: str
    violates_pdb: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod.key,
            "priority": self.pod.priority,
            "priorityClass": str(self.pod.priority_class) or None,
            "violatesPDB": self.violates_pdb,
            "reason": self.reason,
        }


@dataclass(slots=True)
class Candidate:
    """A node and the victims whose eviction makes the pod fit there (`preemption.Candidate`)."""

    node: str
    victims: list[Victim]
    num_pdb_violations: int = 0
    #: potential victims given back because the pod still fits with them, and why each was kept
    reprieved: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "victims": [v.as_dict() for v in self.victims],
            "numPDBViolations": self.num_pdb_violations,
            "reprieved": self.reprieved,
        }


class PreemptionPolicy(Protocol):
    """What a preempting plugin decides (`preemption.Interface` of kube-scheduler)."""

    def eligible(self, pod: PodInfo) -> tuple[bool, str]:
        """Whether the pod may preempt at all, with the reason when it may not
        (`PodEligibleToPreemptOthers`)."""
        ...

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        """Whether `victim` may be evicted for `pod`."""
        ...

    def num_candidates(self, nodes: int) -> int:
        """How many candidate nodes to find before choosing (`GetOffsetAndNumCandidates`)."""
        ...


#: An extra check a policy adds after Filter passes on the reduced node, reading the cycle state the
#: PreFilter extensions adjusted (ElasticQuota: the quota's used, less the victims removed, plus the
#: pod within its runtime).
ExtraFit = Callable[[CycleState, PodInfo], bool]


def more_important(a: PodInfo, b: PodInfo) -> bool:
    """kube-scheduler's `util.MoreImportantPod`: higher priority first (Koordinator's
    `koordinator.sh/priority` sub-priority breaks ties within a class), then the earlier start."""
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.sub_priority != b.sub_priority:
        return a.sub_priority > b.sub_priority
    return _start_time(a) < _start_time(b)


def _start_time(pod: PodInfo) -> str:
    status = status_of(pod.obj)
    # RFC 3339 UTC timestamps order as strings; a pod not started yet sorts last
    return str(status.get("startTime") or pod.metadata.get("creationTimestamp") or "9999")


def _importance_key(pod: PodInfo) -> tuple[int, int, str]:
    return (-pod.priority, -pod.sub_priority, _start_time(pod))


class Evaluator:
    """Runs one preemption for one policy over the nodes of the cluster.

    `filtering` is the framework's Filter for a node (all plugins, transformers and nominated pods
    included) and its PreFilter extensions; `budgets` the cluster's PodDisruptionBudgets."""

    def __init__(
        self,
        plugin: str,
        policy: PreemptionPolicy,
        filtering: PodFilter,
        nodes: Mapping[str, NodeInfo],
        budgets: Sequence[Mapping[str, Any]],
        extra_fit: ExtraFit | None = None,
    ) -> None:
        self.plugin = plugin
        self.policy = policy
        self.filtering = filtering
        self.nodes = nodes
        self.budgets = budgets
        self.extra_fit = extra_fit
        #: per budget: its selector compiled once, the pods it already counts as disrupted, and
        #: the disruptions it allows
        self._budgets = [
            (
                selector_of(b),
                frozenset(status_of(b).get("disruptedPods") or {}),
                _allowed(b),
            )
            for b in budgets
        ]

    def select_candidate(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[Candidate | None, list[Candidate], Status]:
        """The node to preempt on (None with the reason when preemption cannot help) and every
        candidate that was evaluated. Changes nothing."""
        ok, why = self.policy.eligible(pod)
        if not ok:
            return None, [], unresolvable(why)
        potential = sorted(name for name, s in statuses.items() if s.code is Code.Unschedulable and name in self.nodes)
        if not potential:
            return (
                None,
                [],
                unresolvable(f"0/{len(self.nodes)} nodes are available: preemption is not helpful for scheduling."),
            )
        wanted = self.policy.num_candidates(len(potential))
        candidates: list[Candidate] = []
        non_violating = 0
        for name in potential:
            node = self.nodes[name]
            victims = self.potential_victims(pod, node)
            if not victims:  # (`SelectVictimsOnNode`'s "No victims found": nothing to try here)
                continue
            candidate, _ = self._select_victims(state, pod, node, victims)
            if candidate is None:
                continue
            candidates.append(candidate)
            if candidate.num_pdb_violations == 0:
                non_violating += 1
            if non_violating >= wanted:
                break
        if not candidates:
            return (
                None,
                [],
                unschedulable(
                    f"0/{len(self.nodes)} nodes are available: no preemption victims found for incoming pod."
                ),
            )
        return pick_one_node(candidates), candidates, SUCCESS

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[Candidate | None, Status]:
        """The fewest victims on `node` that let `pod` fit (`SelectVictimsOnNode`). `state` is not
        changed: the victims are removed on a clone."""
        potential = self.potential_victims(pod, node)
        if not potential:
            return None, unresolvable(f"No victims found on node {node.name} for preemptor pod {pod.name}")
        return self._select_victims(state, pod, node, potential)

    def potential_victims(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]:
        """The pods on `node` the policy lets `pod` evict (reserve pods are never victims)."""
        can_preempt = self.policy.can_preempt
        return [p for p in node.pods.values() if not is_reserve_pod(p) and can_preempt(pod, p)]

    def _select_victims(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, potential: list[PodInfo]
    ) -> tuple[Candidate | None, Status]:
        """`select_victims_on_node` given the node's potential victims (not empty)."""
        state = state.clone()
        reduced = node.copy()
        filtering = self.filtering
        for victim in potential:
            reduced.remove_pod(victim.key)
            status = filtering.run_pre_filter_extension_remove_pod(state, pod, victim, reduced)
            if not status.is_success:
                return None, status
        status = filtering.run_filter_with_nominated_pods(state, pod, reduced)
        if not status.is_success:
            return None, status
        if self.extra_fit is not None and not self.extra_fit(state, pod):
            return None, unschedulable(f"the pod does not fit its quota on node {node.name} even without victims")
        potential.sort(key=_importance_key)
        violating, non_violating = self.split_by_pdb(potential)
        victims: list[Victim] = []
        reprieved: list[dict[str, str]] = []
        violations = 0
        failure: list[Status] = []

        def reprieve(candidate: PodInfo, violates: bool) -> None:
            reduced.add_pod(candidate)
            status = filtering.run_pre_filter_extension_add_pod(state, pod, candidate, reduced)
            if not status.is_success:
                failure.append(status)
                return
            fits = filtering.run_filter_with_nominated_pods(state, pod, reduced).is_success and (
                self.extra_fit is None or self.extra_fit(state, pod)
            )
            if fits:
                why = (
                    "a PodDisruptionBudget allows it no disruption: given back first, and the pod still fits"
                    if violates
                    else "more important than the victims, and the pod still fits with it"
                )
                reprieved.append({"pod": candidate.key, "reason": why})
                return
            reduced.remove_pod(candidate.key)
            status = filtering.run_pre_filter_extension_remove_pod(state, pod, candidate, reduced)
            if not status.is_success:
                failure.append(status)
                return
            victims.append(Victim(candidate, self._reason(pod, candidate, violates), violates))

        for p in violating:
            reprieve(p, True)
            if failure:
                return None, failure[0]
            if victims and victims[-1].pod is p:
                violations += 1
        for p in non_violating:
            reprieve(p, False)
            if failure:
                return None, failure[0]
        victims.sort(key=lambda v: _importance_key(v.pod))  # highest priority first, as upstream
        return Candidate(node.name, victims, violations, reprieved), SUCCESS

    def _reason(self, pod: PodInfo, victim: PodInfo, violates: bool) -> str:
        priority = f"priority {victim.priority}"
        if victim.priority_class:
            priority += f" ({victim.priority_class})"
        text = f"{priority} < preemptor's {pod.priority}"
        if pod.priority_class:
            text += f" ({pod.priority_class})"
        text += "; the pod does not fit with it on the node"
        if violates:
            text += "; evicting it violates a PodDisruptionBudget (no candidate without a violation)"
        return text

    def split_by_pdb(self, pods: Sequence[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
        """`filterPodsWithPDBViolation`: a pod whose budgets have no disruption left is violating;
        each pod counted uses one disruption of every budget that selects it. Order is kept."""
        allowed = [b[2] for b in self._budgets]
        violating: list[PodInfo] = []
        non_violating: list[PodInfo] = []
        for pod in pods:
            violated = False
            if pod.labels:
                for i, (selects_pod, disrupted, _) in enumerate(self._budgets):
                    if not selects_pod(pod.obj):
                        continue
                    if pod.name in disrupted:
                        continue
                    allowed[i] -= 1
                    if allowed[i] < 0:
                        violated = True
            (violating if violated else non_violating).append(pod)
        return violating, non_violating


def _allowed(budget: Mapping[str, Any]) -> int:
    """`status.disruptionsAllowed`; a budget the disruption controller has not counted yet allows
    nothing (kube-scheduler reads the status only)."""
    value = status_allowed(budget)
    return 0 if value is None else value


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate:
    """`pickOneNodeForPreemption`: a node without victims at once; else the criteria in order
    (fewest PDB violations, lowest highest-victim priority, lowest priority sum, fewest victims,
    latest start of the highest-priority victims), ties to the lowest node name."""
    for candidate in candidates:
        if not candidate.victims:
            return candidate
    offset = 2**31  # kube adds MaxInt32 + 1 so negative priorities sum sensibly

    def key(c: Candidate) -> tuple[int, int, int, int, str, str]:
        highest = c.victims[0].pod.priority
        earliest = min(_start_time(v.pod) for v in c.victims if v.pod.priority == highest)
        inverted = "".join(chr(0x10FFFF - ord(ch)) for ch in earliest)  # latest start wins
        return (
            c.num_pdb_violations,
            highest,
            sum(v.pod.priority + offset for v in c.victims),
            len(c.victims),
            inverted,
            c.node,
        )

    return min(candidates, key=key)

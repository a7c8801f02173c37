"""Coscheduling (Koordinator's `pkg/scheduler/plugins/coscheduling/coscheduling.go`): all-or-nothing
gangs.

PreEnqueue holds back a member of a gang that is undefined or has fewer members than `minMember`
(members are counted only where every pending pod is known: not behind the extender, which
watches bound pods only; there Permit alone holds the gang).
PreFilter refuses the same, and the members of a Strict gang rejected in this round (until each
member was tried once). Permit parks each member (Wait, the gang's wait time) until `minMember`
of every gang of its group are waiting, then allows them all (`handle.waiting`). Unreserve, a
Permit timeout and PostFilter (a member that fits nowhere) reject every waiting member of a Strict
gang group; a NonStrict gang lets the others wait on. `next_pod` keeps a gang together in the
queue: after one member, the next untried member of the same gang is scheduled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import PostFilterResult, PreFilterResult
from scheduler_plugins.scheduler.framework.status import SUCCESS, Code, Status, unresolvable, unschedulable
from scheduler_plugins.scheduler.plugins.coscheduling.gang import (
    MATCH_ONCE_SATISFIED,
    MATCH_POLICIES,
    Gang,
    GangSpec,
    gang_id,
    spec_from_pod,
    spec_from_pod_group,
)
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME: Final = "Coscheduling"
DEFAULT_TIMEOUT_SECONDS: Final = 600.0


@dataclass(frozen=True)
class CoschedulingArgs:
    default_timeout: float = DEFAULT_TIMEOUT_SECONDS
    default_match_policy: str = MATCH_ONCE_SATISFIED


def parse_args(raw: Mapping[str, Any] | None, path: str) -> CoschedulingArgs:
    fields = Fields(raw, path)
    timeout = fields.duration("defaultTimeout", DEFAULT_TIMEOUT_SECONDS)
    if timeout <= 0:
        raise ConfigError(fields.at("defaultTimeout"), f"must be positive, got {timeout:g}s")
    policy = fields.str("defaultMatchPolicy", MATCH_ONCE_SATISFIED)
    if policy not in MATCH_POLICIES:
        raise ConfigError(fields.at("defaultMatchPolicy"), f"must be one of {', '.join(MATCH_POLICIES)}")
    return CoschedulingArgs(timeout, policy)


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.gangs: dict[str, Gang] = {}
        self.current = ""  # the gang whose member was scheduled last (NextPod)
        for pod in list(handle.cluster.pending.values()):
            self._gang(pod, add=True)

    # --- gangs -----------------------------------------------------------------------------------
    def _spec(self, gid: str, pod: PodInfo) -> GangSpec | None:
        group = self.handle.cluster.pod_groups.get(gid)
        if group is not None:
            return spec_from_pod_group(gid, group, self.args.default_timeout, self.args.default_match_policy)
        return spec_from_pod(pod, self.args.default_timeout, self.args.default_match_policy)

    def _gang(self, pod: PodInfo, add: bool = False) -> Gang | None:
        """The pod's gang (created from its PodGroup or annotations when first seen), or None."""
        gid = gang_id(pod)
        if not gid:
            return None
        gang = self.gangs.get(gid)
        if gang is None:
            spec = self._spec(gid, pod)
            if spec is None:
                return None
            gang = self.gangs[gid] = Gang(spec)
        if add:
            gang.children.add(pod.key)
        return gang

    def _group(self, gang: Gang) -> list[Gang]:
        return [self.gangs[g] for g in gang.spec.groups if g in self.gangs] or [gang]

    def _incomplete(self, pod: PodInfo, gang: Gang | None) -> Status | None:
        if gang is None:
            return unresolvable(f"Gang {gang_id(pod)!r} is not defined (no PodGroup, no valid min-available)")
        if not self.handle.cluster.tracks_pending:  # members are unknown until they come: Permit waits
            return None
        for member in self._group(gang):
            if len(member.children) < member.spec.min_member and not member.once_satisfied:
                return unresolvable(
                    f"Gang {member.spec.id!r} child pod not collect enough "
                    f"({len(member.children)} of {member.spec.min_member})"
                )
        return None

    # --- ClusterListener: bound members ----------------------------------------------------------
    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None:
        gang = self._gang(pod, add=True)
        if gang is not None:
            gang.waiting.discard(pod.key)
            gang.bound.add(pod.key)

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None:
        gang = self.gangs.get(gang_id(pod))
        if gang is not None:
            gang.bound.discard(pod.key)
            gang.children.discard(pod.key)

    def on_node_metric(self, node_name: str, metric: dict[str, Any] | None) -> None:
        """NodeMetrics are none of this plugin's business."""

    # --- queueing --------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not gang_id(pod):
            return SUCCESS
        gang = self._gang(pod, add=True)
        return self._incomplete(pod, gang) or SUCCESS

    def next_pod(self, queued: Mapping[str, PodInfo]) -> PodInfo | None:
        """The next untried member (by name) of the gang scheduled last, if one is queued."""
        gang = self.gangs.get(self.current)
        if gang is None:
            return None
        for key in sorted(gang.children):
            if key in queued:
                return queued[key]
        return None

    # --- PreFilter / PostFilter ------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        if not gang_id(pod):
            return None, SUCCESS
        gang = self._gang(pod, add=True)
        problem = self._incomplete(pod, gang)
        if problem is not None or gang is None:
            return None, problem or unresolvable("no gang")
        self.current = gang.spec.id
        if gang.rejected:
            _tried(gang, pod.key)
            return None, unschedulable(f"Gang {gang.spec.id!r} gets rejected in this round")
        return None, SUCCESS

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        gang = self.gangs.get(gang_id(pod))
        if gang is None:
            return None, Status(Code.Unschedulable)
        if statuses and all(s.plugin == NAME for s in statuses.values()):  # our own PreFilter refusal
            return None, unschedulable(f"Gang {gang.spec.id!r}: Pod {pod.name!r} is unschedulable")
        if gang.spec.strict and not gang.once_satisfied:
            self._reject_group(
                gang, f"Gang {gang.spec.id!r} gets rejected due to member Pod {pod.name!r} is unschedulable", pod.key
            )
        return None, unschedulable(f"Gang {gang.spec.id!r}: Pod {pod.name!r} is unschedulable")

    # --- Permit / Reserve ------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        gang = self.gangs.get(gang_id(pod))
        if gang is None:
            return SUCCESS, 0.0
        gang.waiting.add(pod.key)
        group = self._group(gang)
        if not all(member.valid_for_permit() for member in group):
            return Status(Code.Wait), gang.spec.wait_time
        ids = {member.spec.id for member in group}
        for member in group:
            member.once_satisfied = True
        for waiting in self.handle.waiting:
            if gang_id(waiting.pod) in ids:
                waiting.allow(NAME)
        return SUCCESS, 0.0

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Idempotent: a pod not waiting changes nothing but may still reject its Strict gang."""
        gang = self.gangs.get(gang_id(pod))
        if gang is None or pod.key not in gang.waiting:
            return
        gang.waiting.discard(pod.key)
        if gang.spec.match_policy == MATCH_ONCE_SATISFIED and gang.once_satisfied:
            return
        ids = {member.spec.id for member in self._group(gang)}
        still_waiting = any(w.outcome is None and gang_id(w.pod) in ids for w in self.handle.waiting)
        if gang.spec.strict and still_waiting:  # not when the group is being rejected already
            self._reject_group(
                gang, f"Gang {gang.spec.id!r} gets rejected due to Pod {pod.name!r} in Unreserve", pod.key
            )

    def _reject_group(self, gang: Gang, message: str, tried: str) -> None:
        """Reject every waiting member of the gang's group; members not tried yet in this round
        are refused at PreFilter (`tried` and the waiting ones have been)."""
        group = self._group(gang)
        ids = {member.spec.id for member in group}
        for member in group:
            if not member.once_satisfied and not member.rejected:
                member.rejected = True
                member.tried_since_rejection = set(member.waiting | member.bound)
        _tried(gang, tried)
        for waiting in self.handle.waiting:
            if gang_id(waiting.pod) in ids:
                waiting.reject(NAME, message)


def _tried(gang: Gang, key: str) -> None:
    """Count a member as tried since the gang's rejection; once all were, the round is over and
    the gang may be scheduled again."""
    if not gang.rejected:
        return
    gang.tried_since_rejection.add(key)
    if gang.tried_since_rejection >= gang.children:
        gang.rejected, gang.tried_since_rejection = False, set()


def new(args: CoschedulingArgs, handle: Handle) -> Coscheduling:
    return Coscheduling(args, handle)

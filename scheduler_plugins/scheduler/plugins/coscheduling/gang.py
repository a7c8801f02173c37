"""Gangs (Koordinator's `coscheduling/core/gang.go`, `apis/extension/coscheduling.go`): who belongs
to one, and its rules, from a PodGroup or Koordinator's annotations.

A pod's gang is named by the label `pod-group.scheduling.sigs.k8s.io` (a PodGroup), else the
legacy label `pod-group.scheduling.sigs.k8s.io/name`, else the annotation
`gang.scheduling.koordinator.sh/name`; its id is `namespace/name`. A PodGroup gives `minMember`
and `scheduleTimeoutSeconds`; without one the first pod's annotations define the gang. Bad values
fall back as Koordinator does (total < min ⇒ min; unknown mode ⇒ Strict; bad wait ⇒ the default
timeout); a missing or invalid `min-available` leaves the gang undefined, and its pods wait.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MIN_NUM,
    ANNOTATION_GANG_MODE,
    ANNOTATION_GANG_NAME,
    ANNOTATION_GANG_TOTAL_NUM,
    ANNOTATION_GANG_WAIT_TIME,
    GANG_MODE_NON_STRICT,
    GANG_MODE_STRICT,
    LABEL_POD_GROUP,
    LABEL_POD_GROUP_LEGACY,
)
from policies.apis.durations import parse_duration
from policies.apis.objects import metadata_of, spec_of
from scheduler_plugins.scheduler.podinfo import PodInfo

MATCH_ONCE_SATISFIED: Final = "once-satisfied"
MATCH_ONLY_WAITING: Final = "only-waiting"
MATCH_WAITING_AND_RUNNING: Final = "waiting-and-running"
MATCH_POLICIES: Final = (MATCH_ONCE_SATISFIED, MATCH_ONLY_WAITING, MATCH_WAITING_AND_RUNNING)
ANNOTATION_MATCH_POLICY: Final = "gang.scheduling.koordinator.sh/match-policy"
ANNOTATION_MATCH_POLICY_ALIAS: Final = "pod-group.scheduling.sigs.k8s.io/match-policy"


def gang_id(pod: PodInfo) -> str:
    """`namespace/name` of the pod's gang, or "" for a pod in none."""
    name = (
        pod.labels.get(LABEL_POD_GROUP)
        or pod.labels.get(LABEL_POD_GROUP_LEGACY)
        or pod.annotations.get(ANNOTATION_GANG_NAME)
    )
    return f"{pod.namespace}/{name}" if name else ""


@dataclass(frozen=True, slots=True)
class GangSpec:
    id: str
    min_member: int
    total: int
    mode: str = GANG_MODE_STRICT
    wait_time: float = 600.0
    groups: tuple[str, ...] = ()
    match_policy: str = MATCH_ONCE_SATISFIED

    @property
    def strict(self) -> bool:
        return self.mode != GANG_MODE_NON_STRICT


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _shared(
    gid: str,
    annotations: Mapping[str, str],
    min_member: int,
    wait: float | None,
    default_timeout: float,
    default_policy: str,
) -> GangSpec:
    total = _int(annotations.get(ANNOTATION_GANG_TOTAL_NUM)) or 0
    mode = annotations.get(ANNOTATION_GANG_MODE, GANG_MODE_STRICT)
    policy = annotations.get(ANNOTATION_MATCH_POLICY) or annotations.get(ANNOTATION_MATCH_POLICY_ALIAS) or ""
    groups: tuple[str, ...] = (gid,)
    try:
        raw_groups = json.loads(annotations.get(ANNOTATION_GANG_GROUPS) or "null")
        if isinstance(raw_groups, list) and raw_groups and all(isinstance(g, str) for g in raw_groups):
            groups = tuple(sorted(set(raw_groups) | {gid}))
    except ValueError:
        pass
    return GangSpec(
        id=gid,
        min_member=min_member,
        total=total if total >= min_member else min_member,
        mode=mode if mode in (GANG_MODE_STRICT, GANG_MODE_NON_STRICT) else GANG_MODE_STRICT,
        wait_time=wait if wait and wait > 0 else default_timeout,
        groups=groups,
        match_policy=policy if policy in MATCH_POLICIES else default_policy,
    )


def spec_from_pod(pod: PodInfo, default_timeout: float, default_policy: str) -> GangSpec | None:
    """The gang the annotations of its first pod define; None when `min-available` is not a positive int."""
    gid = gang_id(pod)
    min_member = _int(pod.annotations.get(ANNOTATION_GANG_MIN_NUM))
    if not gid or min_member is None or min_member < 1:
        return None
    try:
        wait: float | None = parse_duration(pod.annotations.get(ANNOTATION_GANG_WAIT_TIME))
    except ValueError:
        wait = None
    return _shared(gid, pod.annotations, min_member, wait, default_timeout, default_policy)


def spec_from_pod_group(
    gid: str, group: Mapping[str, Any], default_timeout: float, default_policy: str
) -> GangSpec | None:
    spec = spec_of(group)
    min_member = _int(spec.get("minMember"))
    if min_member is None or min_member < 1:
        return None
    annotations = metadata_of(group).get("annotations") or {}
    wait = _int(spec.get("scheduleTimeoutSeconds"))
    return _shared(gid, annotations, min_member, float(wait) if wait else None, default_timeout, default_policy)


@dataclass
class Gang:
    """One gang's progress: its members (children), those waiting in Permit (or permitted and
    not yet bound), those bound; whether it was ever satisfied; a Strict rejection in force."""

    spec: GangSpec
    children: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)
    once_satisfied: bool = False
    #: a Strict gang rejected this round: members are refused at PreFilter until each was tried
    rejected: bool = False
    tried_since_rejection: set[str] = field(default_factory=set)

    def valid_for_permit(self) -> bool:
        policy, need = self.spec.match_policy, self.spec.min_member
        if policy == MATCH_ONLY_WAITING:
            return len(self.waiting) >= need
        if policy == MATCH_WAITING_AND_RUNNING:
            return len(self.waiting) + len(self.bound) >= need
        return self.once_satisfied or len(self.waiting) >= need

"""ElasticQuota's PostFilter: preemption within a quota (`pkg/scheduler/plugins/elasticquota/preempt.go`;
tests `TestPostFilter`, `TestSelectVictimsOnNode`, `TestCanPreempt` in `preempt_test.go`).

A pod rejected for its quota (or by a node) may evict pods of its **own** quota whose priority is
lower; never a non-preemptible pod (`quota.scheduling.koordinator.sh/preemptible: "false"`), never
a pod of the default quota when `disableDefaultQuotaPreemption`. Victims are chosen by the shared
evaluator (`framework/preemption.py`) over every node, with one more condition than Filter: once
they are gone the quota's used plus the pod's request fits its runtime (or max without
`enableRuntimeQuota`). That used is this cycle's `QuotaUsed`, written before the evaluator runs and
adjusted by the plugin's PreFilter extensions as victims are removed and given back (Koordinator's
`postFilterState.used`, `AddPod`/`RemovePod` in `elasticquota/plugin.go`). A pod PreFilter
rejected for its quota is filtered on nodes after the other PreFilter plugins ran again without the
quota check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from policies.apis.constants import DEFAULT_QUOTA_NAME, LABEL_QUOTA_PREEMPTIBLE
from scheduler_plugins.scheduler.framework.cycle_state import PREFILTER_REJECTED_BY, CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.preemption import ExtraFit
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, unresolvable
from scheduler_plugins.scheduler.plugins.defaultpreemption import PreemptingPlugin
from scheduler_plugins.scheduler.plugins.elasticquota.args import ElasticQuotaArgs
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector

NAME: Final = "ElasticQuota"
#: CycleState key of `QuotaUsed` (written by the PostFilter, read and adjusted on clones).
QUOTA_USED_KEY: Final = NAME + "/postFilter"


@dataclass(slots=True)
class QuotaUsed:
    """The preemptor's quota and its used, as the victims removed so far leave it (StateData)."""

    quota: str
    used: Vector

    def clone(self) -> QuotaUsed:
        return QuotaUsed(self.quota, dict(self.used))


def adjust_used(manager: QuotaManager, state: CycleState, other: PodInfo, sign: int) -> None:
    """Count `other`'s request in (`sign` 1) or out of (-1) the preemptor's quota used, when it is a
    pod of that quota; the resources the quota does not limit are left alone."""
    st: QuotaUsed | None = state.read(QUOTA_USED_KEY)
    if st is None or manager.quota_of(other) != st.quota:
        return
    info = manager.state_of(st.quota)
    limited = info.spec.max if info is not None else {}
    for name, amount in other.requests.items():
        if name in limited:
            st.used[name] = max(st.used.get(name, 0) + sign * amount, 0)


class QuotaPreemption(PreemptingPlugin):
    name = NAME

    def __init__(self, args: ElasticQuotaArgs, handle: Handle, manager: QuotaManager) -> None:
        super().__init__(handle)
        self.args, self.manager = args, manager

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        """`canPreempt`: same quota, strictly lower priority, preemptible, not the default quota's
        when default-quota preemption is disabled."""
        if victim.labels.get(LABEL_QUOTA_PREEMPTIBLE) == "false":
            return False
        victim_quota = self.manager.quota_of(victim)
        if self.args.disable_default_quota_preemption and victim_quota == DEFAULT_QUOTA_NAME:
            return False
        return pod.priority > victim.priority and self.manager.quota_of(pod) == victim_quota

    def extra_fit(self, state: CycleState) -> ExtraFit | None:
        return self._quota_fit

    def _quota_fit(self, state: CycleState, pod: PodInfo) -> bool:
        """used (less the victims removed in `state`) + the pod's request ≤ the quota's limit, in
        the pod's resources."""
        st: QuotaUsed | None = state.read(QUOTA_USED_KEY)
        info = self.manager.state_of(st.quota) if st is not None else None
        if st is None or info is None:
            return True
        limit = info.runtime if self.args.enable_runtime_quota else info.spec.max
        for name, amount in pod.requests.items():
            if name in info.spec.max and st.used.get(name, 0) + amount > limit.get(name, 0):
                return False
        return True

    def prepare_state(self, state: CycleState, pod: PodInfo) -> tuple[CycleState, Status]:
        rejected_by = state.read(PREFILTER_REJECTED_BY)
        if rejected_by and rejected_by != NAME:
            return state, unresolvable(f"preemption cannot help: PreFilter plugin {rejected_by} rejected the pod")
        if rejected_by:
            pre_filter: Callable[..., tuple[PodInfo, object, Status]] | None = self.handle.pre_filter
            assert pre_filter is not None, "the Framework sets handle.pre_filter"
            fresh = CycleState()
            _, _, status = pre_filter(fresh, pod, frozenset({NAME}))
            if not status.is_success:
                return fresh, status
            state = fresh
        quota = self.manager.quota_of(pod)
        info = self.manager.state_of(quota)
        if info is not None:
            state.write(QUOTA_USED_KEY, QuotaUsed(quota, dict(info.used)))
        return state, SUCCESS

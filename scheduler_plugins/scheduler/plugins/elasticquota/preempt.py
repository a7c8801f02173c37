"""ElasticQuota's PostFilter: preemption within a quota (`pkg/scheduler/plugins/elasticquota/preempt.go`;
tests `TestPostFilter`, `TestSelectVictimsOnNode`, `TestCanPreempt` in `preempt_test.go`).

A pod rejected for its quota (or by a node) may evict pods of its **own** quota whose priority is
lower; never a non-preemptible pod (`quota.scheduling.koordinator.sh/preemptible: "false"`), never
a pod of the default quota when `disableDefaultQuotaPreemption`. Victims are chosen by the shared
evaluator (`framework/preemption.py`) over every node, with one more condition than Filter: once
they are gone the quota's used plus the pod's request fits its runtime (or max without
`enableRuntimeQuota`). A pod PreFilter rejected for its quota is filtered on nodes after the other
PreFilter plugins ran again without the quota check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from policies.constants import DEFAULT_QUOTA_NAME, LABEL_QUOTA_PREEMPTIBLE
from scheduler_plugins.scheduler.framework.cycle_state import PREFILTER_REJECTED_BY, CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.preemption import ExtraFit
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, unresolvable
from scheduler_plugins.scheduler.plugins.defaultpreemption import PreemptingPlugin
from scheduler_plugins.scheduler.plugins.elasticquota.args import ElasticQuotaArgs
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME: Final = "ElasticQuota"


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

    def _quota_fit(self, pod: PodInfo, removed: Sequence[PodInfo]) -> bool:
        """used − the victims' requests + the pod's request ≤ the quota's limit, in the pod's resources."""
        quota = self.manager.quota_of(pod)
        info = self.manager.state_of(quota)
        if info is None:
            return True
        limit = info.runtime if self.args.enable_runtime_quota else info.spec.max
        request = {r: v for r, v in pod.requests.items() if r in info.spec.max}
        for name, amount in request.items():
            used = info.used.get(name, 0) - sum(v.requests.get(name, 0) for v in removed if v.key != pod.key)
            if used + amount > limit.get(name, 0):
                return False
        return True

    def prepare_state(self, state: CycleState, pod: PodInfo) -> tuple[CycleState, Status]:
        rejected_by = state.read(PREFILTER_REJECTED_BY)
        if not rejected_by:
            return state, SUCCESS
        if rejected_by != NAME:
            return state, unresolvable(f"preemption cannot help: PreFilter plugin {rejected_by} rejected the pod")
        pre_filter: Callable[..., tuple[PodInfo, object, Status]] | None = self.handle.pre_filter
        assert pre_filter is not None, "the Framework sets handle.pre_filter"
        fresh = CycleState()
        _, _, status = pre_filter(fresh, pod, frozenset({NAME}))
        return fresh, status

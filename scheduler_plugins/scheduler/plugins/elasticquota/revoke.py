"""The over-quota monitor: a quota whose used stays above its runtime longer than
`delayEvictTime` has pods evicted until it fits, so a quota that lent its min takes it back
(`pkg/scheduler/plugins/elasticquota/quota_overuse_revoke.go`, QuotaOverUsedRevokeController;
tests `TestQuotaOverUsedGroupMonitor_*`, `TestQuotaOverUsedRevokeController_*`).

Per quota (not the system or root quota) a monitor remembers when its used last fitted its runtime;
over it for longer than `delayEvictTime`, the quota's assigned pods are taken, lowest priority
first and skipping non-preemptible ones, until used fits; then, highest priority first, each taken
pod whose return still fits is given back. The rest are the pods to evict (all taken, when even
taking every preemptible pod does not fit). Koordinator runs it every `revokePodInterval` and only
with `monitorAllQuotas` and `enableRuntimeQuota`; `OverUsedRevoker.due` is the decision, whoever
runs it evicts.
"""

from __future__ import annotations

from collections.abc import Mapping

from policies.apis.constants import LABEL_QUOTA_PREEMPTIBLE, ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME
from policies.apis.objects import status_of
from scheduler_plugins.scheduler.plugins.elasticquota.args import ElasticQuotaArgs
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector


def _fits(used: Mapping[str, int], runtime: Mapping[str, int]) -> bool:
    """quotav1.LessThanOrEqual: every resource of `used` within `runtime` (missing = 0)."""
    return all(amount <= runtime.get(name, 0) for name, amount in used.items())


def _masked_add(used: Vector, request: Mapping[str, int], sign: int) -> Vector:
    out = dict(used)
    for name, amount in request.items():
        out[name] = out.get(name, 0) + sign * amount
    return out


def pods_to_revoke(pods: list[PodInfo], used: Mapping[str, int], runtime: Mapping[str, int]) -> list[PodInfo]:
    """`getToRevokePodList`: the fewest low-priority pods whose eviction brings used within runtime."""
    used = dict(used)
    taken: list[PodInfo] = []
    for pod in sorted(pods, key=_least_important_first):
        if _fits(used, runtime):
            break
        if pod.labels.get(LABEL_QUOTA_PREEMPTIBLE) == "false":
            continue
        used = _masked_add(used, {r: v for r, v in pod.requests.items() if r in used}, -1)
        taken.append(pod)
    if not _fits(used, runtime):
        return taken
    revoked: list[PodInfo] = []
    for pod in reversed(taken):  # give back, most important first
        back = _masked_add(used, {r: v for r, v in pod.requests.items() if r in used}, +1)
        if _fits(back, runtime):
            used = back
        else:
            revoked.append(pod)
    return revoked


def _least_important_first(pod: PodInfo) -> tuple[int, int, str]:
    status = status_of(pod.obj)
    start = str(status.get("startTime") or pod.metadata.get("creationTimestamp") or "")
    # the reverse of more_important: lower priority first, then the later start first
    return (pod.priority, pod.sub_priority, "".join(chr(0x10FFFF - ord(c)) for c in start))


class OverUsedRevoker:
    def __init__(self, args: ElasticQuotaArgs, manager: QuotaManager) -> None:
        self.args, self.manager = args, manager
        #: per quota, when its used last fitted its runtime (bounded by the quotas that exist)
        self.last_under: dict[str, float] = {}

    @property
    def enabled(self) -> bool:
        return self.args.monitor_all_quotas and self.args.enable_runtime_quota

    def due(self, now: float) -> dict[str, list[PodInfo]]:
        """One monitoring pass at `now`: the pods to evict, by quota."""
        states = self.manager.states()
        for gone in set(self.last_under) - set(states):
            del self.last_under[gone]
        out: dict[str, list[PodInfo]] = {}
        for name, state in sorted(states.items()):
            if name in (ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME):
                continue
            since = self.last_under.setdefault(name, now)
            used = {r: v for r, v in state.used.items() if r in state.spec.max}
            if _fits(used, state.runtime):
                self.last_under[name] = now
                continue
            if now - since <= self.args.delay_evict_time:
                continue
            self.last_under[name] = now
            pods = pods_to_revoke(self.manager.assigned_pods(name), used, state.runtime)
            if pods:
                out[name] = pods
        return out

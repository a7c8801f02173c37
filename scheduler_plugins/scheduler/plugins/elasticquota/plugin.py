"""The ElasticQuota plugin (Koordinator's `elasticquota/plugin.go`): PreFilter refuses a pod whose
quota would pass its runtime (or its max), Reserve/Unreserve count the pod in its quota's used.

The plugin follows the quota objects and every live pod (pending ones count in their quota's
request). A pod the cluster state does not hold (the extender is sent the pod being scheduled;
pending pods are not watched) is judged as if it were pending in its quota. PostFilter preempts
lower-priority pods of the pod's own quota (`preempt.py`); the over-quota monitor (`revoke.py`)
says which pods of a quota that stayed over its runtime longer than `delayEvictTime` to evict, so
a quota takes back what it lent.

Reservations count like pods: an Available reservation is in its quota's used for what it still
holds (the held entry of its node, `allocatable − allocated`), its owners for what they request.
So a pod that consumes a reservation moves that amount from the reservation to itself, and
PreFilter judges it with what a matched reservation of the same quota still holds taken off its
request: it is never counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.apis.constants import ELASTIC_QUOTA_KIND, LABEL_QUOTA_PREEMPTIBLE, ROOT_QUOTA_NAME
from policies.apis.quantity import scalar_text
from scheduler_plugins.scheduler.framework.cycle_state import MATCHED_RESERVATIONS, CycleState
from scheduler_plugins.scheduler.framework.features import ELASTIC_QUOTA_GUARANTEE_USAGE
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import PostFilterResult, PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from scheduler_plugins.scheduler.plugins.elasticquota.args import ElasticQuotaArgs
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.plugins.elasticquota.preempt import QuotaPreemption, adjust_used
from scheduler_plugins.scheduler.plugins.elasticquota.revoke import OverUsedRevoker
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector

NAME = "ElasticQuota"


def format_resources(resources: Mapping[str, int]) -> str:
    """`cpu=12, memory=8Gi` in name order, as quantities."""
    return ", ".join(f"{name}={scalar_text(name, resources[name])}" for name in sorted(resources)) or "<none>"


class ElasticQuota:
    name = NAME
    listened_kinds = frozenset({ELASTIC_QUOTA_KIND})

    def __init__(self, args: ElasticQuotaArgs, handle: Handle) -> None:
        self.args = args
        self.manager = QuotaManager(
            args, handle.cluster.allocatable_total, handle.features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE)
        )
        self.preemption = QuotaPreemption(args, handle, self.manager)
        self.revoker = OverUsedRevoker(args, self.manager)
        self.reservations = handle.cluster.reservations

    # --- listeners -------------------------------------------------------------------------------
    def on_object(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> None:
        self.manager.set_quota(name.rpartition("/")[2], obj)

    def on_pod_added(self, pod: PodInfo) -> None:
        self.manager.add_pod(pod)

    def on_pod_removed(self, key: str) -> None:
        self.manager.remove_pod(key)

    def on_reservation_held(self, reserve_pod: PodInfo, node_name: str) -> None:
        """What an Available reservation still holds counts in its quota's used."""
        self.manager.add_pod(reserve_pod, used=True)

    def on_reservation_released(self, reserve_pod: PodInfo, node_name: str) -> None:
        self.manager.remove_pod(reserve_pod.key)

    # --- extension points ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        manager = self.manager
        quota = manager.quota_of(pod)
        if manager.spec(quota) is None or quota == ROOT_QUOTA_NAME:
            return None, SKIP
        hypothetical = not manager.knows(pod.key)
        if hypothetical:
            manager.add_pod(pod, used=False)
        try:
            status = self._check(quota, pod, pod.requests)
            for held in self._covered(state, quota):  # what a matched reservation already counts
                if status.is_success:
                    break
                if self._check(quota, pod, _less(pod.requests, held)).is_success:
                    status = SUCCESS
            return None, status
        finally:
            if hypothetical:
                manager.remove_pod(pod.key)

    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """PreFilter extension: a victim given back counts in the quota's used again."""
        adjust_used(self.manager, state, other, +1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
        """PreFilter extension: a victim removed no longer counts in the quota's used."""
        adjust_used(self.manager, state, other, -1)
        return SUCCESS

    def _covered(self, state: CycleState, quota: str) -> list[Vector]:
        """What each reservation the pod matches, counted in the same quota, still holds."""
        matched = state.read(MATCHED_RESERVATIONS)
        if not isinstance(matched, Mapping):
            return []
        return [
            self.reservations.remaining(info)
            for infos in matched.values()
            for info in infos
            if self.manager.quota_of(info.reserve_pod) == quota
        ]

    def _check(self, quota: str, pod: PodInfo, requests: Vector) -> Status:
        manager = self.manager
        state = manager.state_of(quota)
        assert state is not None
        spec = state.spec
        request = {r: v for r, v in requests.items() if r in spec.max}
        limit = state.runtime if self.args.enable_runtime_quota else spec.max
        status = _fits(quota, "Insufficient quotas", limit, state.used, request, "runtime")
        if status is not None:
            return status
        if pod.labels.get(LABEL_QUOTA_PREEMPTIBLE) == "false":
            status = _fits(
                quota,
                "Insufficient non-preemptible quotas",
                spec.min,
                manager.non_preemptible_used(quota),
                request,
                "min",
            )
            if status is not None:
                return status
        if self.args.enable_check_parent_quota:
            parent = spec.parent
            while parent and parent != ROOT_QUOTA_NAME:
                ancestor = manager.state_of(parent)
                if ancestor is None:
                    break
                masked = {r: v for r, v in requests.items() if r in ancestor.spec.max}
                status = _fits(parent, "Insufficient parent quotas", ancestor.runtime, ancestor.used, masked, "runtime")
                if status is not None:
                    return status
                parent = ancestor.spec.parent
        return SUCCESS

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        return self.preemption.post_filter(state, pod, statuses)

    def explain_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> dict[str, Any] | None:
        if self.manager.spec(self.manager.quota_of(pod)) is None:
            return None
        return self.preemption.explain_post_filter(state, pod, statuses)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.manager.set_used(pod, True)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.manager.set_used(pod, False)


def _less(requests: Mapping[str, int], held: Mapping[str, int]) -> Vector:
    return {name: max(0, amount - held.get(name, 0)) for name, amount in requests.items()}


def _fits(
    quota: str, what: str, limit: Mapping[str, int], used: Mapping[str, int], request: Vector, limit_name: str
) -> Status | None:
    exceed = [r for r in sorted(request) if used.get(r, 0) + request[r] > limit.get(r, 0)]
    if not exceed:
        return None
    shown = {r: limit.get(r, 0) for r in request}
    return Status(
        Code.Unschedulable,
        (
            f"{what}, quotaName: {quota}, {limit_name}: {format_resources(shown)}, "
            f"used: {format_resources({r: used.get(r, 0) for r in request})}, "
            f"pod's request: {format_resources(request)}, exceedDimensions: [{', '.join(exceed)}]",
        ),
    )


def new(args: ElasticQuotaArgs, handle: Handle) -> ElasticQuota:
    return ElasticQuota(args, handle)

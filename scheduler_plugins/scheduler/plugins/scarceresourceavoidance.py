"""ScarceResourceAvoidance (Koordinator's `pkg/scheduler/plugins/scarceresourceavoidance/`): keep
pods that do not need a scarce resource (a GPU, say) off the nodes that have it. Score = share of
the node's unrequested resources that are not scarce; no normalisation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import RESOURCE_PODS
from policies.apis.field_errors import Fields
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "ScarceResourceAvoidance"
_STATE_KEY = NAME + "/podResources"


@dataclass(frozen=True)
class ScarceResourceAvoidanceArgs:
    resources: frozenset[str] = frozenset()


def parse_args(raw: Mapping[str, Any] | None, path: str) -> ScarceResourceAvoidanceArgs:
    return ScarceResourceAvoidanceArgs(frozenset(Fields(raw, path).str_list("resources")))


def scarce_score(pod_names: set[str] | frozenset[str], node_names: set[str], scarce: frozenset[str]) -> int:
    diff = node_names - pod_names
    inter = diff & scarce
    if not diff or not inter:
        return 100
    return (len(diff) - len(inter)) * 100 // len(diff)


class ScarceResourceAvoidance:
    name = NAME

    def __init__(self, args: ScarceResourceAvoidanceArgs) -> None:
        self.args = args

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        state.write(_STATE_KEY, frozenset(r for r, v in pod.requests.items() if v > 0))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        pod_names = state.read(_STATE_KEY)
        if pod_names is None:
            pod_names = frozenset(r for r, v in pod.requests.items() if v > 0)
        node_names = {r for r, v in node.allocatable.items() if v > 0 and r != RESOURCE_PODS}
        return scarce_score(pod_names, node_names, self.args.resources), SUCCESS


def new(args: ScarceResourceAvoidanceArgs, handle: Handle) -> ScarceResourceAvoidance:
    return ScarceResourceAvoidance(args)

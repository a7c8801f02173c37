"""NodeResourcesFitPlus (Koordinator's `pkg/scheduler/plugins/noderesourcefitplus/`): per-resource
MostAllocated / LeastAllocated with weights, for the resources named in the args only. PreScore
records which resources the pod requests; Score needs no normalisation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.scoring import least_requested, most_requested
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "NodeResourcesFitPlus"
MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
_STATE_KEY = NAME + "/requested"


@dataclass(frozen=True)
class ResourcePolicy:
    type: str
    weight: int


@dataclass(frozen=True)
class NodeResourcesFitPlusArgs:
    resources: Mapping[str, ResourcePolicy]


def parse_args(raw: Mapping[str, Any] | None, path: str) -> NodeResourcesFitPlusArgs:
    fields = Fields(raw, path)
    table = fields.sub("resources")
    out: dict[str, ResourcePolicy] = {}
    for name in table.raw:
        entry = table.sub(str(name))
        kind = entry.str("type", "")
        if kind not in (MOST_ALLOCATED, LEAST_ALLOCATED):
            raise ConfigError(entry.at("type"), f"must be {MOST_ALLOCATED} or {LEAST_ALLOCATED}, got {kind!r}")
        weight = entry.int("weight", 1)
        if weight < 0:
            raise ConfigError(entry.at("weight"), "must not be negative")
        out[str(name)] = ResourcePolicy(kind, weight)
    return NodeResourcesFitPlusArgs(out)


def _node_requested(node: NodeInfo, resource: str) -> int:
    if resource in (RESOURCE_CPU, RESOURCE_MEMORY):
        return node.non_zero_requested.get(resource, 0)
    return node.requested.get(resource, 0)


class NodeResourcesFitPlus:
    name = NAME

    def __init__(self, args: NodeResourcesFitPlusArgs) -> None:
        self.args = args

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        names = [r for r, v in pod.requests.items() if v > 0 and r in self.args.resources]
        state.write(_STATE_KEY, sorted(names))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        names = state.read(_STATE_KEY)
        if names is None:
            self.pre_score(state, pod, [node])
            names = state.read(_STATE_KEY)
        node_score = weight_sum = 0
        for name in names:
            policy = self.args.resources[name]
            pod_request = pod.non_zero_requests.get(name, 0)
            requested = _node_requested(node, name) + pod_request
            capacity = node.allocatable.get(name, 0)
            scorer = most_requested if policy.type == MOST_ALLOCATED else least_requested
            node_score += scorer(requested, capacity) * policy.weight
            weight_sum += policy.weight
        return (100 if weight_sum == 0 else node_score // weight_sum), SUCCESS


def new(args: NodeResourcesFitPlusArgs, handle: Handle) -> NodeResourcesFitPlus:
    return NodeResourcesFitPlus(args)

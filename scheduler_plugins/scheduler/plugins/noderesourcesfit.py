"""NodeResourcesFit with the QoS-aware fit colocation needs.

Filter: a pod fits when every resource it requests is free on the node, with the pod's requests
taken in the band it consumes (`PodInfo.qos_requests`): a koord-batch (BE) pod's cpu/memory are
checked against `kubernetes.io/batch-cpu`/`batch-memory` allocatable, a koord-mid pod's against
`mid-*`, every other pod against the regular `cpu`/`memory`. Node usage is summed the same way.
Reasons are upstream's: "Too many pods", "Insufficient <resource>" (all that apply).

Score: upstream LeastAllocated over `scoringStrategy.resources` (default cpu and memory, weight 1),
using non-zero requests (100m / 200Mi defaults) for cpu and memory; resources the node does not
have are left out of the weighted mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, RESOURCE_PODS
from policies.apis.field_errors import ConfigError, Fields, check_range
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.scoring import least_requested
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, unschedulable
from scheduler_plugins.scheduler.plugins.noderesourcesfit_vector import NodeResourcesFitVector, ScoringRow
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "NodeResourcesFit"
LEAST_ALLOCATED = "LeastAllocated"
DEFAULT_SCORING_RESOURCES = ((RESOURCE_CPU, 1), (RESOURCE_MEMORY, 1))
_STATE_KEY = NAME + "/preFilter"
#: pods allowed on a node whose allocatable does not say (kubelet's default maxPods)
DEFAULT_MAX_PODS = 110
_FIRST = (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    scoring_resources: tuple[tuple[str, int], ...] = DEFAULT_SCORING_RESOURCES


def parse_args(raw: Mapping[str, Any] | None, path: str) -> NodeResourcesFitArgs:
    fields = Fields(raw, path)
    strategy = fields.sub("scoringStrategy")
    kind = strategy.str("type", LEAST_ALLOCATED)
    if kind != LEAST_ALLOCATED:
        raise ConfigError(strategy.at("type"), f"only {LEAST_ALLOCATED} is supported, got {kind!r}")
    resources = []
    for i, item in enumerate(strategy.raw.get("resources") or []):
        entry = Fields(item, f"{strategy.at('resources')}[{i}]")
        name, weight = entry.str("name"), entry.int("weight", 1)
        if not name:
            raise ConfigError(entry.at("name"), "is required")
        check_range(entry.at("weight"), weight, 0, 100, open_low=True)
        resources.append((name, weight))
    return NodeResourcesFitArgs(tuple(resources) or DEFAULT_SCORING_RESOURCES)


def _ordered(requests: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Positive requests, cpu/memory/ephemeral-storage first, then extended names sorted."""
    first = [(r, requests[r]) for r in _FIRST if requests.get(r, 0) > 0]
    rest = sorted((r, v) for r, v in requests.items() if r not in _FIRST and r != RESOURCE_PODS and v > 0)
    return tuple(first + rest)


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs, handle: Handle) -> None:
        self.args = args
        self._last: tuple[CycleState, PodInfo, list[ScoringRow]] | None = None
        #: the optional vector path (numpy), held equal to `filter` and `score`
        self.vector = NodeResourcesFitVector(self, handle.cluster)

    def requests(self, state: CycleState, pod: PodInfo) -> tuple[tuple[str, int], ...]:
        cached: tuple[tuple[str, int], ...] | None = state.read(_STATE_KEY)
        if cached is None:
            cached = _ordered(pod.qos_requests)
            state.write(_STATE_KEY, cached)
        return cached

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        self.requests(state, pod)
        return None, SUCCESS

    @staticmethod
    def allocatable(node: NodeInfo, name: str) -> int:
        """The node's allocatable `name` (pods: kubelet's default when the node does not say)."""
        return node.allocatable.get(name, DEFAULT_MAX_PODS if name == RESOURCE_PODS else 0)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        allocatable, used = node.allocatable, node.qos_requested
        reasons = []
        if len(node.pods) + 1 > self.allocatable(node, RESOURCE_PODS):
            reasons.append("Too many pods")
        for name, amount in self.requests(state, pod):
            if amount > allocatable.get(name, 0) - used.get(name, 0):
                reasons.append(f"Insufficient {name}")
        return unschedulable(*reasons) if reasons else SUCCESS

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        return SUCCESS

    def pod_scoring(self, state: CycleState, pod: PodInfo) -> list[ScoringRow]:
        """Per cycle: (resource, weight, pod request, counted with non-zero defaults?)."""
        last = self._last
        if last is not None and last[0] is state and last[1] is pod:
            return last[2]
        rows: list[ScoringRow] = []
        for name, weight in self.args.scoring_resources:
            non_zero = name in (RESOURCE_CPU, RESOURCE_MEMORY)
            request = (pod.non_zero_requests if non_zero else pod.requests).get(name, 0)
            rows.append((name, weight, request, non_zero))
        self._last = (state, pod, rows)  # holds the state, so its identity is not reused
        return rows

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        total = weights = 0
        allocatable, non_zero_requested, requested = node.allocatable, node.non_zero_requested, node.requested
        for name, weight, request, non_zero in self.pod_scoring(state, pod):
            capacity = allocatable.get(name, 0)
            if capacity == 0:
                continue
            used = (non_zero_requested if non_zero else requested).get(name, 0) + request
            total += least_requested(used, capacity) * weight
            weights += weight
        return (total // weights if weights else 0), SUCCESS


def new(args: NodeResourcesFitArgs, handle: Handle) -> NodeResourcesFit:
    return NodeResourcesFit(args, handle)

"""CPUSuppress (Koordinator's `CPUSuppresss`, gate `BECPUSuppress`,
`pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go`): BE pods get what the node has left
under `cpuSuppressThresholdPercent` after the non-BE pods, the non-BE host applications and the
system — as a cpuset (default) or as a CFS quota of the BE QoS cgroup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Final

from policies.apis.constants import (
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_RESOURCE_STATUS,
    ANNOTATION_SYSTEM_QOS_RESOURCE,
    KubernetesQoSClass,
    QoSClass,
)
from policies.apis.cpuset import format_cpuset, parse_cpuset
from policies.apis.objects import annotations_of
from policies.apis.quantity import QuantityError, milli_value
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.cgroups.resources import CPU_CFS_QUOTA, CPUSET_CPUS, DEFAULT_CFS_PERIOD
from scheduler_plugins.koordlet.nodeslo import CPU_SUPPRESS_POLICY_CFS_QUOTA, ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.topology import CPUInfo, select_cpus

NAME = "CPUSuppress"
_EMPTY: Mapping[str, object] = MappingProxyType({})
#: read every round (a member of an enum class costs an attribute lookup through its type)
_BEST_EFFORT: Final = KubernetesQoSClass.BEST_EFFORT
_QOS: Final = Level.QOS
MIN_QUOTA = 2000
MIN_CPUS = 2


def _json_annotation(obj: object, key: str) -> Mapping[str, object]:
    if not isinstance(obj, dict):
        return _EMPTY
    text = annotations_of(obj).get(key)
    if not text:
        return _EMPTY
    return _json_object(text)


@lru_cache(maxsize=1024)
def _json_object(text: str) -> Mapping[str, object]:
    """The JSON object an annotation holds, parsed once per text (a node's annotations are read
    every round and change rarely); read-only, as it is shared. Empty when not an object."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return _EMPTY
    return MappingProxyType(parsed) if isinstance(parsed, dict) else _EMPTY


def node_reserved_milli(inp: RoundInput) -> int:
    """max(capacity − allocatable, the node's reservation annotation) in millicores."""
    kubelet = max(0, inp.node_amount("capacity", "cpu") - inp.node_amount("allocatable", "cpu"))
    reservation = _json_annotation(inp.state.node, ANNOTATION_NODE_RESERVATION)
    annotated = 0
    resources = reservation.get("resources")
    if isinstance(resources, dict) and "cpu" in resources:
        try:
            annotated = milli_value(resources["cpu"])
        except (QuantityError, TypeError):
            annotated = 0
    elif isinstance(reservation.get("cpus"), str):
        try:
            annotated = 1000 * len(parse_cpuset(str(reservation["cpus"])))
        except ValueError:
            annotated = 0
    return max(kubelet, annotated)


class NodeFigures:
    """The Node's figures a round reads: its CPU capacity, and the reserved CPU once asked for.
    They depend on the Node object only, so a strategy keeps them while the Node it reads is the
    very object read before (an informer replaces an object that changes, never edits it)."""

    __slots__ = ("node", "capacity", "_reserved")

    def __init__(self, inp: RoundInput) -> None:
        self.node = inp.state.node
        self.capacity = inp.node_amount("capacity", "cpu")
        self._reserved: int | None = None

    def reserved(self, inp: RoundInput) -> int:
        if self._reserved is None:
            self._reserved = node_reserved_milli(inp)
        return self._reserved


def be_pod_keys(pods: tuple[PodView, ...]) -> frozenset[str]:
    """The keys of the pods the suppress formula counts as BE."""
    return frozenset([p.key for p in pods if p.is_be])


def suppress_milli(
    inp: RoundInput,
    threshold: ThresholdStrategy,
    node: NodeFigures | None = None,
    be_pods: frozenset[str] | None = None,
) -> int:
    """calculateBESuppressCPU: the millicores BE may use now (`node`: the Node's figures, if kept;
    `be_pods`: `be_pod_keys` of the round's pods, if kept)."""
    if node is None:
        node = NodeFigures(inp)
    capacity = node.capacity
    if capacity <= 0:
        return 0
    usage = inp.usage
    pods_all = pods_non_be = 0
    if usage.pods:
        if be_pods is None:
            be_pods = be_pod_keys(inp.pods)
        for key, u in usage.pods.items():
            cpu = u.cpu_milli
            pods_all += cpu
            if key not in be_pods:
                pods_non_be += cpu
    apps_all = apps_non_be = 0
    if usage.host_apps:  # most nodes report none: no sets or sums to build then
        apps = inp.state.node_slo.host_applications if inp.state.node_slo else ()
        be_apps = {a.name for a in apps if a.is_be}
        for name, u in usage.host_apps.items():
            cpu = u.cpu_milli
            apps_all += cpu
            if name not in be_apps:
                apps_non_be += cpu
    node_used = usage.node.cpu_milli if usage.node is not None else 0
    system = max(0, node_used - pods_all - apps_all, node.reserved(inp))
    suppress = capacity * threshold.cpu_suppress_threshold_percent // 100 - pods_non_be - apps_non_be - system
    if threshold.cpu_suppress_min_percent is not None:
        suppress = max(suppress, capacity * threshold.cpu_suppress_min_percent // 100)
    return suppress


def _be_dirs(inp: RoundInput) -> list[tuple[str, Level]]:
    dirs = [(inp.layout.qos_dir(_BEST_EFFORT), Level.QOS)]
    for pod in inp.pods:
        if pod.is_be:
            dirs.append((pod.dir, Level.POD))
            dirs.extend((c.dir, Level.CONTAINER) for c in pod.containers if c.dir)
    return dirs


@dataclass(frozen=True)
class CPUPools:
    lsr: tuple[CPUInfo, ...]
    ls: tuple[CPUInfo, ...]

    @property
    def all(self) -> tuple[CPUInfo, ...]:
        return tuple(sorted(self.lsr + self.ls))


def cpu_pools(inp: RoundInput) -> CPUPools:
    """Every processor minus the node-reserved, SYSTEM-exclusive and LSE-bound CPUs, split into
    the CPUs bound to LSR pods and the rest."""
    excluded: set[int] = set()
    for obj, key in (
        (inp.state.node, ANNOTATION_NODE_RESERVATION),
        (inp.state.topology, ANNOTATION_SYSTEM_QOS_RESOURCE),
    ):
        found = _json_annotation(obj, key)
        text = found.get("cpus") or found.get("cpuset")
        if isinstance(text, str):
            try:
                excluded |= parse_cpuset(text)
            except ValueError:
                pass
    lsr: set[int] = set()
    for pod in inp.pods:
        if pod.raw_qos not in (QoSClass.LSE, QoSClass.LSR):
            continue
        status = _json_annotation(dict(pod.pod), ANNOTATION_RESOURCE_STATUS)
        try:
            bound = parse_cpuset(str(status.get("cpuset") or ""))
        except ValueError:
            continue
        (excluded if pod.raw_qos is QoSClass.LSE else lsr).update(bound)
    candidates = [p for p in inp.processors if p.cpu not in excluded]
    return CPUPools(tuple(p for p in candidates if p.cpu in lsr), tuple(p for p in candidates if p.cpu not in lsr))


def cpuset_for(inp: RoundInput, suppress: int, pools: CPUPools) -> list[int]:
    """adjustByCPUSet's choice of processors for `suppress` millicores."""
    count = max(math.ceil(suppress / 1000), MIN_CPUS)
    old = inp.read(inp.layout.qos_dir(_BEST_EFFORT), CPUSET_CPUS)
    if isinstance(old, str):
        try:
            old_count = len(parse_cpuset(old))
        except ValueError:
            old_count = None
        max_increase = math.ceil(len(inp.processors) * 0.1)
        if old_count is not None and count - old_count > max_increase:
            count = old_count + max_increase
    total = len(pools.lsr) + len(pools.ls)
    if total == 0:
        return []
    count = min(count, total)  # BE may have at most every candidate CPU
    n_lsr = count * len(pools.lsr) // total
    chosen = select_cpus(pools.lsr, n_lsr) if n_lsr else []
    rest = select_cpus(pools.ls, count - n_lsr)
    return sorted(chosen + rest)


def cfs_quota_for(inp: RoundInput, suppress: int, capacity: int | None = None) -> int | None:
    """adjustByCfsQuota: the BE QoS quota to write, None to leave it (`capacity`: the node's CPU
    capacity in millicores, if known)."""
    if capacity is None:
        capacity = inp.node_amount("capacity", "cpu")
    new = max(suppress * DEFAULT_CFS_PERIOD // 1000, MIN_QUOTA)
    current = inp.read(inp.layout.qos_dir(_BEST_EFFORT), CPU_CFS_QUOTA)
    cur = current if isinstance(current, int) else -1
    # capacity_cores × period × 1 % == capacity in millicores
    if abs(new - cur) < capacity and new != MIN_QUOTA:
        return None
    if cur != -1 and new - cur > capacity * 10:
        new = cur + capacity * 10
    return new


class CPUSuppress:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.cpu_suppress_interval
        #: the gate is fixed at start-up: read once, not every round
        self._be_cpu_manager = options.gates.enabled(features.BE_CPU_MANAGER)
        #: policies known to be recovered (Koordinator's suppressPolicyStatuses): recovered once, then left
        self.recovered: set[str] = set()
        #: the figures of the Node last read (one: a koordlet serves one node)
        self._node: NodeFigures | None = None
        #: the BE pods' keys of the pod views last read, while they are the very tuple
        self._pods: tuple[PodView, ...] | None = None
        self._be_pods: frozenset[str] = frozenset()

    def _figures(self, inp: RoundInput) -> NodeFigures:
        node = self._node
        if node is None or node.node is not inp.state.node:
            node = self._node = NodeFigures(inp)
        return node

    def _be_keys(self, pods: tuple[PodView, ...]) -> frozenset[str]:
        if pods is not self._pods:
            self._be_pods = be_pod_keys(pods)
            self._pods = pods
        return self._be_pods

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.BE_CPU_SUPPRESS) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def _recover(self, inp: RoundInput, result: StrategyResult, cfs: bool, cpuset: bool) -> None:
        cfs, cpuset = cfs and "cfsQuota" not in self.recovered, cpuset and "cpuset" not in self.recovered
        if not (cfs or cpuset):  # recovered already (every round of a node that keeps one policy)
            return
        be_qos = inp.layout.qos_dir(_BEST_EFFORT)
        if cfs:
            self.recovered.add("cfsQuota")
            result.writes.append(CgroupWrite(NAME, be_qos, CPU_CFS_QUOTA, -1, Level.QOS))
        if cpuset:
            self.recovered.add("cpuset")
            pool = format_cpuset(p.cpu for p in cpu_pools(inp).all)
            if pool:
                result.writes.extend(CgroupWrite(NAME, d, CPUSET_CPUS, pool, level) for d, level in _be_dirs(inp))

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        if self._be_cpu_manager:
            result.status["reason"] = "BECPUManager is on: suppress is left to the BE CPU manager"
            self._recover(inp, result, cfs=True, cpuset=False)
            return result
        slo = inp.state.node_slo
        if slo is None or not slo.threshold.enable:
            result.status["reason"] = inp.state.node_slo_error or "disabled by NodeSLO"
            self._recover(inp, result, cfs=True, cpuset=True)
            return result
        threshold = slo.threshold
        node = self._figures(inp)
        suppress = suppress_milli(inp, threshold, node, self._be_keys(inp.pods))
        status = result.status
        status["policy"] = threshold.cpu_suppress_policy
        status["suppressMilliCPU"] = suppress
        if threshold.cpu_suppress_policy == CPU_SUPPRESS_POLICY_CFS_QUOTA:
            self.recovered.discard("cfsQuota")
            quota = cfs_quota_for(inp, suppress, node.capacity)
            status["cfsQuota"] = quota
            if quota is not None:
                result.writes.append(CgroupWrite(NAME, inp.layout.qos_dir(_BEST_EFFORT), CPU_CFS_QUOTA, quota, _QOS))
            if "cpuset" not in self.recovered:
                self._recover(inp, result, cfs=False, cpuset=True)
            return result
        self.recovered.discard("cpuset")
        cpus = cpuset_for(inp, suppress, cpu_pools(inp))
        text = format_cpuset(cpus)
        status["cpus"] = text
        if cpus:
            result.writes.extend(CgroupWrite(NAME, d, CPUSET_CPUS, text, level) for d, level in _be_dirs(inp))
        if "cfsQuota" not in self.recovered:
            self._recover(inp, result, cfs=True, cpuset=False)
        return result

"""CPUBurst (Koordinator's `pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go`, checked
against its `TestCPUBurst_applyCFSQuotaBurst`, `TestCPUBurst_getNodeStateForBurst` and
`Test_burstLimiter_Allow`).

For every running pod whose raw QoS is not LSR, LSE or BE:

* `cpu.cfs_burst_us` of each container = its CPU limit × `cpuBurstPercent` (0 when the policy is
  neither `cpuBurstOnly` nor `auto`, or the container has no limit), and of the pod their sum;
* the CFS quota of each container with a CPU limit moves gradually: up by ×1.2 while the container
  is throttled and the node's share pool is idle, down by ×0.8 when the share pool is overloaded
  (or the container used up its burst budget, `cfsQuotaBurstPeriodSeconds`), staying within the
  limit's quota and `cfsQuotaBurstPercent` of it; back to the limit's quota when the policy is
  neither `cfsQuotaBurstOnly` nor `auto`. The pod's quota moves by the same amount.

The share pool is the node's CPUs less the LSE/LSR pods' requests; its use the node's use less
the LSE/LSR/BE pods'. At or above `sharePoolThresholdPercent` it is overloaded, within 90 % of it
cooling (no scaling up), below that idle. Throttling is read from each container's `cpu.stat`
between two rounds, so the first round of a container never scales it up.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from policies.apis.constants import ANNOTATION_CPU_BURST, RESOURCE_CPU, QoSClass
from policies.apis.objects import annotations_of
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.cgroups.resources import CPU_BURST, CPU_CFS_QUOTA, CPU_STAT, DEFAULT_CFS_PERIOD
from scheduler_plugins.koordlet.nodeslo import CPUBurstStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME = "CPUBurst"
CPU_BURST_ONLY, CFS_QUOTA_BURST_ONLY, AUTO, NONE = "cpuBurstOnly", "cfsQuotaBurstOnly", "auto", "none"
CFS_INCREASE_STEP, CFS_DECREASE_STEP = 1.2, 0.8
SHARE_POOL_COOLING_RATIO = 0.9
#: the limiter spends tokens at or above this usage of the limit (%), saves them below the other
LIMITER_CONSUME_PERCENT, LIMITER_SAVE_PERCENT = 100, 60

IDLE, COOLING, OVERLOAD, UNKNOWN = "idle", "cooling", "overload", "unknown"
SCALE_UP, SCALE_DOWN, REMAIN, RESET = "scaleUp", "scaleDown", "remain", "reset"
#: the classes whose CPUs are their own (not the share pool's), and those CPUBurst leaves alone
_EXCLUSIVE: Final = (QoSClass.LSE, QoSClass.LSR)
_NOT_BURSTED: Final = (QoSClass.LSE, QoSClass.LSR, QoSClass.BE)
_POD: Final = Level.POD
_CONTAINER: Final = Level.CONTAINER


def pod_strategy(pod: PodView, node: CPUBurstStrategy) -> CPUBurstStrategy:
    """genPodBurstConfig: the pod's `koordinator.sh/cpuBurst` annotation over the node's."""
    text = annotations_of(pod.pod).get(ANNOTATION_CPU_BURST)
    if not text:
        return node
    try:
        override = json.loads(text)
    except ValueError:
        return node
    if not isinstance(override, dict) or not override:
        return node
    merged = {
        "policy": node.policy,
        "cpuBurstPercent": node.cpu_burst_percent,
        "cfsQuotaBurstPercent": node.cfs_quota_burst_percent,
        "cfsQuotaBurstPeriodSeconds": node.cfs_quota_burst_period_seconds,
        "sharePoolThresholdPercent": node.share_pool_threshold_percent,
        **override,
    }
    try:
        return CPUBurstStrategy.parse(merged, "metadata.annotations")
    except ValueError:
        return node


def node_state(share_pool_usage: float, share_pool_total: float, threshold_percent: int) -> str:
    """getNodeStateForBurst from the share pool's use and size (cores)."""
    ratio = share_pool_usage / share_pool_total if share_pool_total > 0 else 1.0
    threshold = threshold_percent / 100
    if ratio >= threshold:
        return OVERLOAD
    if ratio >= threshold * SHARE_POOL_COOLING_RATIO:
        return COOLING
    return IDLE


def operation(cfs_enabled: bool, allowed: bool, throttled: float | None) -> str:
    """genOperationByContainer."""
    if not cfs_enabled:
        return RESET
    if not allowed:
        return SCALE_DOWN
    if throttled is None or throttled <= 0:
        return REMAIN
    return SCALE_UP


def by_node(state: str, op: str) -> str:
    """changeOperationByNode: an overloaded pool scales down, a cooling or unknown one never up."""
    if state == OVERLOAD and op in (SCALE_UP, REMAIN):
        return SCALE_DOWN
    if state in (COOLING, UNKNOWN) and op == SCALE_UP:
        return REMAIN
    return op


def target_quota(base: int, ceil: int, current: int, op: str) -> int:
    """The container's next CFS quota: a step from the current one, within [base, ceil]."""
    target = current
    if op == SCALE_UP:
        target = int(current * CFS_INCREASE_STEP)
    elif op == SCALE_DOWN:
        target = int(current * CFS_DECREASE_STEP)
    elif op == RESET:
        target = base
    return max(base, min(target, ceil))


def static_burst(limit_milli: int, strategy: CPUBurstStrategy) -> int:
    """calcStaticCPUBurstVal: `cpu.cfs_burst_us` for a container's CPU limit."""
    if strategy.policy not in (CPU_BURST_ONLY, AUTO) or limit_milli <= 0:
        return 0
    return int(limit_milli / 1000 * (strategy.cpu_burst_percent / 100) * DEFAULT_CFS_PERIOD)


@dataclass
class BurstLimiter:
    """burstLimiter: a token bucket of `period × (percent − 100)` that a container above its limit
    drains and one under 60 % of it refills; it starts at a random fill of up to a half."""

    capacity: int
    tokens: int
    updated: float

    @classmethod
    def new(cls, period: int, percent: int, now: float, rng: Callable[[], float]) -> BurstLimiter:
        capacity = period * (percent - 100)
        return cls(capacity, int(capacity * (rng() / 2)), now)

    def allow(self, now: float, usage_percent: int) -> bool:
        past = int(now - self.updated)
        if usage_percent >= LIMITER_CONSUME_PERCENT:
            self.tokens -= (usage_percent - 100) * past
        elif usage_percent < LIMITER_SAVE_PERCENT:
            self.tokens += (100 - usage_percent) * past
        self.tokens = max(min(self.tokens, self.capacity), -self.capacity)
        self.updated = now
        return self.tokens > 0


def throttled_ratio(previous: tuple[int, int] | None, stat: str | None) -> tuple[float | None, tuple[int, int] | None]:
    """The share of CFS periods throttled since `previous` (nr_periods, nr_throttled of cpu.stat)."""
    if not stat:
        return None, previous
    fields = dict(line.split(maxsplit=1) for line in stat.splitlines() if len(line.split()) == 2)
    try:
        now = (int(fields["nr_periods"]), int(fields["nr_throttled"]))
    except (KeyError, ValueError):
        return None, previous
    if previous is None:
        return None, now
    periods = now[0] - previous[0]
    return ((now[1] - previous[1]) / periods if periods > 0 else 0.0), now


@dataclass
class _Memory:
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    limiters: dict[str, BurstLimiter] = field(default_factory=dict)


class _PodPlan:
    """What a round derives of one pod before reading its cgroups: its burst strategy, and per
    started container its cgroup, its `cpu.cfs_burst_us` write, its limit's quota and the quota's
    ceiling; the pod's own burst write. All of it depends on the pod object (the layout and the
    node's strategy being the same), so it is kept while the pod is the very object read before:
    an informer replaces a pod that changes, never edits it."""

    __slots__ = ("pod", "node_strategy", "layout", "strategy", "cfs_enabled", "containers", "pod_write")

    def __init__(self, view: PodView, node_strategy: CPUBurstStrategy, layout: object) -> None:
        self.pod, self.node_strategy, self.layout = view.pod, node_strategy, layout
        strategy = self.strategy = pod_strategy(view, node_strategy)
        self.cfs_enabled = strategy.policy in (CFS_QUOTA_BURST_ONLY, AUTO)
        containers = []
        pod_burst = 0
        for c in view.containers:
            if c.dir is None:  # not started: no cgroup yet
                continue
            limit = c.limits.get(RESOURCE_CPU, 0)
            burst = static_burst(limit, strategy)
            pod_burst += burst
            base = limit * DEFAULT_CFS_PERIOD // 1000
            ceil = base * strategy.cfs_quota_burst_percent // 100 if strategy.cfs_quota_burst_percent > 100 else base
            containers.append((c.dir, CgroupWrite(NAME, c.dir, CPU_BURST, burst, _CONTAINER), base, ceil))
        self.containers: tuple[tuple[str, CgroupWrite, int, int], ...] = tuple(containers)
        #: a pod none of whose containers started has no cgroup yet
        self.pod_write = CgroupWrite(NAME, view.dir, CPU_BURST, pod_burst, _POD) if containers else None


class CPUBurst:
    name = NAME

    def __init__(self, options: StrategyOptions, rng: Callable[[], float] = random.random) -> None:
        self.options = options
        self.interval = options.reconcile_interval
        self.rng = rng
        self.memory = _Memory()
        #: by pod key, the plan of the pod object last read (bounded by the node's pods)
        self._plans: dict[str, _PodPlan] = {}

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.CPU_BURST) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def _node_state(self, inp: RoundInput, threshold: int) -> str:
        if inp.usage.node is None or not inp.processors:
            return UNKNOWN
        total = float(len(inp.processors))
        used = inp.usage.node.cpu_milli / 1000
        pods_used = inp.usage.pods
        for pod in inp.pods:
            qos = pod.raw_qos
            if qos in _EXCLUSIVE:
                total -= pod.request(RESOURCE_CPU) / 1000
            if qos in _NOT_BURSTED:
                found = pods_used.get(pod.key)
                if found is not None:
                    used -= found.cpu_milli / 1000
        return node_state(used, total, threshold)

    def _allowed(self, key: str, strategy: CPUBurstStrategy, now: float) -> bool:
        """cfsBurstAllowedByLimiter; the container's usage is taken as its limit (Koordinator's
        fallback when it has no sample), so the bucket neither drains nor fills."""
        period, percent = strategy.cfs_quota_burst_period_seconds, strategy.cfs_quota_burst_percent
        if period < 0:
            return True
        if percent < 100:
            return False
        limiter = self.memory.limiters.get(key)
        if limiter is None or limiter.capacity != period * (percent - 100):
            limiter = self.memory.limiters[key] = BurstLimiter.new(period, percent, now, self.rng)
        return limiter.allow(now, 100)

    def _plan(self, pod: PodView, node_strategy: CPUBurstStrategy, layout: object) -> _PodPlan:
        plan = self._plans.get(pod.key)
        if (
            plan is None
            or plan.pod is not pod.pod
            or plan.node_strategy is not node_strategy
            or plan.layout is not layout
        ):
            plan = self._plans[pod.key] = _PodPlan(pod, node_strategy, layout)
        return plan

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        if slo is None or slo.spec.get("cpuBurstStrategy") is None:
            result.status["reason"] = "the NodeSLO has no cpuBurstStrategy"
            return result
        node_strategy = slo.cpu_burst
        state = self._node_state(inp, node_strategy.share_pool_threshold_percent)
        result.status["policy"] = node_strategy.policy
        result.status["sharePoolState"] = state
        writes = result.writes
        read, layout, stats = inp.read, inp.layout, self.memory.stats
        seen: set[str] = set()
        planned = 0
        for pod in inp.pods:
            if pod.raw_qos in _NOT_BURSTED:
                continue
            plan = self._plan(pod, node_strategy, layout)
            planned += 1
            strategy = plan.strategy
            pod_quota = read(pod.dir, CPU_CFS_QUOTA)
            pod_delta = 0
            for c_dir, burst_write, base, ceil in plan.containers:
                seen.add(c_dir)
                writes.append(burst_write)
                current = read(c_dir, CPU_CFS_QUOTA)
                if base <= 0 or not isinstance(current, int):
                    continue
                stat = read(c_dir, CPU_STAT)
                throttled, sample = throttled_ratio(stats.get(c_dir), stat if isinstance(stat, str) else None)
                if sample is not None:
                    stats[c_dir] = sample
                op = by_node(state, operation(plan.cfs_enabled, self._allowed(c_dir, strategy, inp.now), throttled))
                target = target_quota(base, ceil, current, op)
                if target != current:
                    writes.append(CgroupWrite(NAME, c_dir, CPU_CFS_QUOTA, target, _CONTAINER))
                    pod_delta += target - current
            if plan.pod_write is not None:
                writes.append(plan.pod_write)
            if pod_delta and isinstance(pod_quota, int) and pod_quota > 0:
                writes.append(CgroupWrite(NAME, pod.dir, CPU_CFS_QUOTA, pod_quota + pod_delta, _POD))
        if len(self._plans) > planned:  # forget the plans of pods gone (or no longer burstable)
            keep = {pod.key for pod in inp.pods if pod.raw_qos not in _NOT_BURSTED}
            self._plans = {key: plan for key, plan in self._plans.items() if key in keep}
        if stats:  # Recycle: forget containers that are gone
            for gone in stats.keys() - seen:
                del stats[gone]
                self.memory.limiters.pop(gone, None)
        return result

"""Usage each step: every running pod's usage from its model, capped by its limit and by what the
koordlet's CPUSuppress leaves BE (and the node's cpu), written as the node's NodeMetric in the shape
the koordlet reports (`policies/apis/nodemetric.py` renders and reads it). The models and their draws are in
`workload.py`; the draws come in sorted order from the run's one generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Final

from colocate.cluster.store import ClusterStore, Object
from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.cpuset import parse_cpuset
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.nodemetric import DEFAULT_REPORT_INTERVAL_SECONDS, NodeMetricReading, PodMetric, render_node_metric
from scheduler_plugins.clock import format_time
from scheduler_plugins.koordlet.node_round import DEFAULT_CFS_PERIOD, ResourceUsage
from scheduler_plugins.koordlet.node_round import Usage as MetricUsage

from .components import Koordlet
from .pods import CLASS_INDEX, CLASSES, PodFacts, PodIndex
from .workload import Model, Usage

#: a BE pod below this share of what its usage model asks for counts as starved
STARVED_SHARE = 0.10
CPU_SUPPRESS = "CPUSuppress"


Want = tuple[str, Object, PodFacts, int, int, int]  # key, pod, facts, cpu, memory, cpu the model asked
#: a node's usage in a step: used cpu and memory by class (CLASSES order), the system's cpu, the BE
#: pods starved
NodeUsage = tuple[int, ...]
SYSTEM_CPU: Final = 2 * len(CLASSES)
STARVED_PODS: Final = SYSTEM_CPU + 1


class Sampler:
    """Samples usage into NodeMetrics; `remember` makes the facts of a pod the run has not seen."""

    def __init__(
        self,
        store: ClusterStore,
        pods: PodIndex,
        koordlet: Koordlet,
        nodes: list[str],
        system: Mapping[str, tuple[int, int]],
        capacity: Mapping[str, int],
        rand: random.Random,
        start: float,
        remember: Callable[[Object, Usage | None, float, float | None], PodFacts],
    ) -> None:
        self.store, self.pods, self.koordlet, self.nodes = store, pods, koordlet, nodes
        self.system, self.capacity, self.rand, self.start, self.remember = system, capacity, rand, start, remember

    def sample(self, now: float) -> list[NodeUsage]:
        """Every running pod's usage now, written as its node's NodeMetric; per node (in the run's
        order) the used cpu and memory by class, the system's cpu and the BE pods starved."""
        elapsed = now - self.start
        out: list[NodeUsage] = []
        facts_of = self.pods.facts
        sorted_on = self.pods.sorted_on
        system, capacity = self.system, self.capacity
        get, put = self.store.get, self.store.put
        rand = self.rand
        update_time = format_time(now)
        steady: dict[int, int] = {}  # `_sampled`'s values of this step
        for node in self.nodes:
            wants: list[Want] = []
            be_wants = other_wants = 0
            has_best_effort = False
            for key, pod in sorted_on(node):
                facts = facts_of.get(key)
                if facts is None:
                    facts = self.remember(pod, None, now, now)
                usage = facts.usage
                if usage:
                    cpu_model = usage.get(RESOURCE_CPU)
                    memory_model = usage.get(RESOURCE_MEMORY)
                else:
                    cpu_model = memory_model = None
                if cpu_model is not None:
                    cpu = _sampled(cpu_model, steady, now, elapsed, rand)
                else:
                    cpu = facts.request_cpu or (facts.limit_cpu or 0)
                if memory_model is not None:
                    memory = _sampled(memory_model, steady, now, elapsed, rand)
                else:
                    memory = facts.request_memory or (facts.limit_memory or 0)
                model_cpu = cpu
                if facts.limit_cpu is not None and facts.limit_cpu < cpu:
                    cpu = facts.limit_cpu
                if facts.limit_memory is not None and facts.limit_memory < memory:
                    memory = facts.limit_memory
                wants.append((key, pod, facts, cpu, memory, model_cpu))
                if facts.best_effort:
                    be_wants += cpu
                    has_best_effort = True
                else:
                    other_wants += cpu
            allowed = self._suppress(node, now, wants) if has_best_effort else None
            sys_cpu, sys_mem = system.get(node, (0, 0))
            scale, ls_scale = _shares(be_wants, other_wants, allowed, capacity.get(node, 0) - sys_cpu)
            by_class = [0] * (2 * len(CLASSES))
            pods = []
            starved = 0
            for _key, _pod, facts, cpu, memory, model_cpu in wants:
                if facts.best_effort:
                    if scale < 1.0:
                        cpu = int(cpu * scale)
                    if model_cpu > 0 and cpu < STARVED_SHARE * model_cpu:
                        starved += 1
                elif ls_scale < 1.0:
                    cpu = int(cpu * ls_scale)
                at = 2 * CLASS_INDEX[facts.cls]
                by_class[at] += cpu
                by_class[at + 1] += memory
                pods.append(PodMetric(facts.key, "", {RESOURCE_CPU: cpu, RESOURCE_MEMORY: memory}))
            total_cpu = sys_cpu + by_class[0] + by_class[2] + by_class[4]
            total_mem = sys_mem + by_class[1] + by_class[3] + by_class[5]
            # the node's NodeMetric as the koordlet reports it (`render_node_metric`: its readers are
            # handed this reading rather than parsing it back)
            reading = NodeMetricReading(
                update_time,
                DEFAULT_REPORT_INTERVAL_SECONDS,
                True,
                {RESOURCE_CPU: total_cpu, RESOURCE_MEMORY: total_mem},
                {RESOURCE_CPU: sys_cpu, RESOURCE_MEMORY: sys_mem},
                (),
                tuple(pods),
            )
            put(NODE_METRIC_KIND, render_node_metric(node, reading, get(NODE_METRIC_KIND, ("", node))))
            out.append((*by_class, sys_cpu, starved))
        return out

    def _suppress(self, node: str, now: float, wants: list[Want]) -> int | None:
        """What BE may use on the node this step: the koordlet's CPUSuppress over this step's usage
        (it runs every second on a node, so within a step it has seen the step's usage)."""
        obj = self.store.get("Node", ("", node))
        if obj is None:
            return None
        node_cpu, node_mem = self.system.get(node, (0, 0))
        pods: dict[str, ResourceUsage] = {}
        for key, pod, _, cpu, memory, _ in wants:
            node_cpu += cpu
            node_mem += memory
            # the index's key is the pod's NodeMetric entry's (`_pod_key`), but for a pod without
            # a name, which has no entry
            if key[-1] != "/" or _pod_key(pod) is not None:
                pods[key] = ResourceUsage(cpu, memory)
        usage = MetricUsage(ResourceUsage(node_cpu, node_mem), pods)
        # `wants` are the node's pods in the index's order: its tuple of them, the same object while
        # they do not change (the koordlet keeps its views of them while it is)
        report = self.koordlet.round(obj, self.pods.objects_on(node), self.store, None, (CPU_SUPPRESS,), usage)
        return allowance(report.strategies.get(CPU_SUPPRESS) or {})


def _sampled(model: Model, steady: dict[int, int], now: float, elapsed: float, rand: random.Random) -> int:
    """The model's value now. A model without noise draws nothing, so its value is the same for every
    pod this step (the web tier's pods share one model): it is computed once per step, in `steady`."""
    if model.noise:
        return model.value(now, elapsed, rand)
    value = steady.get(id(model))
    if value is None:
        value = steady[id(model)] = model.value(now, elapsed, rand)
    return value


def _shares(be: int, others: int, allowed: int | None, room: int) -> tuple[float, float]:
    """The share of what they want (`be`, `others`: cpu) that BE pods and the others get: BE at most
    what the koordlet allows and what the others leave of the node's cpu (BE's cpu.shares are the
    lowest), the others at most the node's cpu (split in proportion)."""
    ls_scale = 1.0 if others <= room else max(room, 0) / others
    cap = max(room - others, 0)
    if allowed is not None:
        cap = min(cap, allowed)
    return (1.0 if be <= cap else cap / be), ls_scale


def _pod_key(pod: Object) -> str | None:
    """The pod's key in the koordlet's usage (as a NodeMetric's `podsMetric` entry names it)."""
    meta = pod.get("metadata") or {}
    name = meta.get("name")
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None


def allowance(status: Mapping[str, Any]) -> int | None:
    """The CPU BE may use after the koordlet's suppression (millicores), None when not suppressed."""
    if "cpus" in status and status["cpus"]:
        return 1000 * len(parse_cpuset(str(status["cpus"])))
    quota = status.get("cfsQuota")
    if isinstance(quota, int) and quota > 0:
        return quota * 1000 // DEFAULT_CFS_PERIOD
    if "suppressMilliCPU" in status and status.get("policy") and "cfsQuota" in status:
        return int(status["suppressMilliCPU"])
    return None

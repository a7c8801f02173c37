"""The step loop of `colocate whatif`: arrivals are admitted, usage is sampled into NodeMetrics, the
manager, the scheduler, the koordlet and the descheduler take their turn, evicted pods are
re-created by their controllers. The order of a step and what each record holds are in
docs/whatif.md. Everything is sorted and every random draw comes from the one seeded generator,
so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import copy
import gc
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster.store import Object
from scheduler_plugins.clock import format_time
from scheduler_plugins.descheduler.backends import StoreEvictions
from scheduler_plugins.koordlet.usage import BECPU

from .components import (
    Admission,
    DeschedulerRunner,
    Koordlet,
    Manager,
    SchedulerRunner,
    SimClock,
    capacity_milli,
)
from .inputs import Inputs
from .pods import CLASSES, RECREATING_OWNERS, PodFacts, PodIndex
from .usage import CPU_SUPPRESS, Sampler, cpu_text, memory_text
from .workload import Usage


@dataclass(frozen=True)
class RunOptions:
    start: float
    duration: float
    step: float
    seed: int = 0
    koordlet_gates: str | None = None


class Run:
    """One timeline over one set of profiles."""

    def __init__(self, inputs: Inputs, profiles: list[Object], options: RunOptions) -> None:
        self.options = options
        self.rand = random.Random(options.seed)
        self.clock = SimClock(options.start)
        self.store = store = inputs.fresh_store(profiles)
        self.pods = PodIndex(store)
        self.workload = inputs.workload
        self.admission = Admission(store, self.rand)
        self.manager = Manager(store, self.clock)
        self.scheduler = SchedulerRunner(store, inputs.scheduler_config, self.clock)
        self.koordlet = Koordlet(options.koordlet_gates, self.clock)
        self.descheduler = DeschedulerRunner(store, inputs.descheduler_config, self.clock)
        self.nodes = sorted(o["metadata"]["name"] for o in store.objects("Node"))
        self.capacity = {n: capacity_milli(store.get("Node", ("", n)) or {}) for n in self.nodes}
        self.sampler = Sampler(
            store,
            self.pods,
            self.koordlet,
            self.nodes,
            inputs.system_usage,
            self.capacity,
            self.rand,
            options.start,
            lambda pod, usage, arrived, started: self._remember(pod, usage, arrived, started),
        )
        self.suppressed: dict[str, int] = {}
        self.recreate: list[PodFacts] = []
        self.counter = 0
        self.pending_since: dict[str, float] = {}
        self.pending_seconds: list[float] = []
        bound = {k: p for node in self.pods.by_node.values() for k, p in node.items()}
        for name in sorted(bound):
            self._remember(bound[name], None, options.start, started=options.start)
        for name, pod in sorted(self.pods.pending.items()):
            self._remember(pod, None, options.start)
            self.pending_since[name] = options.start
        self.arrivals = sorted(
            (
                (options.start + t, a.name, n, a)
                for a in self.workload.arrivals
                for n, t in enumerate(a.times(options.duration))
            ),
            key=lambda x: (x[0], x[1], x[2]),
        )
        self.totals = {"admitted": 0, "denied": 0, "recreated": 0}

    def _remember(self, pod: Object, usage: Usage | None, arrived: float, started: float | None = None) -> PodFacts:
        if usage is None:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            usage = self.workload.usage_of_running(labels)
        facts = PodFacts.of(pod, usage, pod, arrived)
        facts.started = started
        self.pods.facts[facts.key] = facts
        return facts

    # --- one step ----------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        steps = []
        count = int(self.options.duration // self.options.step)
        if count * self.options.step < self.options.duration:
            count += 1
        queue = iter(self.arrivals)
        upcoming = next(queue, None)
        try:
            for i in range(count):
                now = self.options.start + i * self.options.step
                self.clock.now = now
                due = []
                while upcoming is not None and upcoming[0] < now + self.options.step:
                    due.append(upcoming)
                    upcoming = next(queue, None)
                steps.append(self.step(now, due))
                # what the steps so far left alive (their records above all) is kept to the end: the
                # cyclic collector need not walk it again and again (at 1,000 nodes that walk grew
                # with every step); what a step throws away is still freed by reference counting
                gc.freeze()
        finally:
            gc.unfreeze()
        end = self.options.start + count * self.options.step
        # still waiting at the end: counted with the wait so far (else a run that never places them looks good)
        self.pending_seconds.extend(
            end - since for key, since in sorted(self.pending_since.items()) if key in self.pods.pending
        )
        return steps

    def step(self, now: float, due: list[tuple[float, str, int, Any]]) -> dict[str, Any]:
        record: dict[str, Any] = {"t": format_time(now)}
        admitted, denied, denials = self._arrive(now, due)
        self._finish(now)
        used = self.sampler.sample(now)
        self.manager.round()
        placements, unqueued = self.scheduler.step()
        placed = 0
        for placement in placements:
            if placement.scheduled:
                placed += 1
                since = self.pending_since.pop(placement.pod, now)
                self.pending_seconds.append(now - since)
                facts = self.pods.facts.get(placement.pod)
                if facts is not None:
                    facts.started = now
        reasons: dict[str, int] = {}
        for placement in [*unqueued, *placements]:
            if not placement.scheduled:
                text = placement.message or placement.status.message or str(placement.status.code.name)
                reasons[text] = reasons.get(text, 0) + 1
        evictions = [  # preemption: the scheduler deleted these pods to place others
            {
                "pod": v["pod"],
                "node": v.get("node", ""),
                "by": f"scheduler/{p.preempted_by}",
                "reason": v.get("reason", ""),
            }
            for p in placements
            for v in p.victims
        ]
        evictions += self._koordlet(now)
        migrations: list[dict[str, Any]] = []
        round_ = self.descheduler.step()
        if round_ is not None:
            evictions += [
                {"pod": e.pod, "node": e.node, "by": f"descheduler/{e.plugin}", "reason": e.reason}
                for e in round_.evictions
            ]
            migrations = [m.as_dict() for m in round_.migrations]
        self._collect_gone()
        if self.koordlet.views_cached > 2 * (len(self.pods.node_of) + 64):
            self.koordlet.forget_pods({id(p) for pods in self.pods.by_node.values() for p in pods.values()})
        record["nodes"] = self._nodes(used)
        record.update(
            pending=len(self.pods.pending),
            pendingReasons=dict(sorted(reasons.items())),
            admitted=admitted,
            denied=denied,
            placed=placed,
            evictions=sorted(evictions, key=lambda e: (e["pod"], e["by"])),
            migrations=migrations,
        )
        if denials:
            record["denials"] = denials
        return record

    def _arrive(self, now: float, due: list[tuple[float, str, int, Any]]) -> tuple[int, int, list[dict[str, str]]]:
        admitted = denied = 0
        denials = []
        batch = [(f.template, f.usage, f.lifetime, True) for f in self.recreate]
        self.recreate = []
        for _, name, number, arrival in due:
            for k in range(arrival.count):
                pod = copy.deepcopy(dict(arrival.template))
                pod["metadata"] = dict(pod.get("metadata") or {})
                pod["metadata"]["name"] = f"{name}-{number * arrival.count + k}"
                batch.append((pod, arrival.usage, arrival.lifetime, False))
        for template, usage, lifetime, recreated in batch:
            pod = copy.deepcopy(dict(template))
            meta = pod.setdefault("metadata", {})
            pod.setdefault("apiVersion", "v1")
            pod["kind"] = "Pod"
            meta.setdefault("namespace", "default")
            self.counter += 1
            if recreated:
                meta["name"] = f"{meta['name'].rsplit('-r', 1)[0]}-r{self.counter}"
            meta["uid"] = str(uuid.UUID(int=self.counter))  # an API server's UIDs are UUIDs
            meta["creationTimestamp"] = format_time(now)
            pod.setdefault("spec", {}).pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            result = self.admission.admit(pod)
            key = f"{meta['namespace']}/{meta['name']}"
            if not result.allowed or result.object is None:
                denied += 1
                denials.append({"pod": key, "message": result.message})
                continue
            admitted += 1
            self.totals["recreated" if recreated else "admitted"] += 1
            facts = PodFacts.of(result.object, usage or None, template, now)
            facts.lifetime = lifetime
            self.pods.facts[key] = facts
            self.pending_since[key] = now
            self.store.put("Pod", result.object)
        self.totals["denied"] += denied
        return admitted, denied, denials

    def _finish(self, now: float) -> None:
        """Pods whose lifetime is over end (Succeeded) and are deleted."""
        for node in self.nodes:
            for key, pod in sorted(self.pods.by_node.get(node, {}).items()):
                facts = self.pods.facts.get(key)
                if facts and facts.lifetime is not None and facts.started is not None:
                    if now >= facts.started + facts.lifetime:
                        self.pods.facts.pop(key, None)
                        self.store.delete("Pod", pod)

    def _koordlet(self, now: float) -> list[dict[str, Any]]:
        evictions: list[dict[str, Any]] = []
        evictor = StoreEvictions(self.store)
        for node in self.nodes:
            obj = self.store.get("Node", ("", node))
            if obj is None:
                continue
            pods = tuple(p for _, p in sorted(self.pods.by_node.get(node, {}).items()))
            be = [self.pods.facts[k] for k in sorted(self.pods.by_node.get(node, {})) if k in self.pods.facts]
            be = [f for f in be if f.best_effort]
            be_cpu = BECPU(0, sum(f.request_cpu for f in be), None) if be else None
            report = self.koordlet.round(obj, pods, self.store, be_cpu)
            status = report.strategies.get(CPU_SUPPRESS) or {}
            self.suppressed[node] = int(status.get("suppressMilliCPU") or 0)
            for eviction in report.evictions:
                namespace, _, name = eviction.key.partition("/")
                result = evictor.evict(namespace, name)
                if result.code < 300:
                    evictions.append(
                        {
                            "pod": eviction.key,
                            "node": node,
                            "by": f"koordlet/{eviction.strategy}",
                            "reason": eviction.reason,
                        }
                    )
        return evictions

    def _collect_gone(self) -> None:
        for key, facts in sorted(self.pods.gone.items()):
            self.pending_since.pop(key, None)
            if facts.owner_kind in RECREATING_OWNERS:  # pods that ran their lifetime are not here
                self.recreate.append(facts)
        self.pods.gone.clear()

    def _nodes(self, used: Mapping[str, Mapping[str, tuple[int, int]]]) -> list[dict[str, Any]]:
        rows = []
        facts_of = self.pods.facts
        zero = (0, 0)
        for node in self.nodes:
            obj = self.store.get("Node", ("", node)) or {}
            requested = {c: [0, 0] for c in CLASSES}
            has_prod = False
            for key in self.pods.by_node.get(node, {}):
                facts = facts_of.get(key)
                if facts is not None:
                    row = requested[facts.cls]
                    row[0] += facts.request_cpu
                    row[1] += facts.request_memory
                    has_prod = has_prod or facts.cls == "prod"
            usage = used.get(node, {})
            allocatable = (obj.get("status") or {}).get("allocatable") or {}
            capacity = capacity_milli(obj)
            by_class = [(c, usage.get(c, zero)) for c in CLASSES]
            total = sum(u[0] for _, u in by_class) + usage.get("_system", zero)[0]
            threshold = self.koordlet.threshold_percent(node)
            rows.append(
                {
                    "name": node,
                    "requested": {
                        c: {"cpu": cpu_text(v[0]), "memory": memory_text(v[1])} for c, v in requested.items()
                    },
                    "used": {c: {"cpu": cpu_text(u[0]), "memory": memory_text(u[1])} for c, u in by_class},
                    "batchAllocatable": {
                        k: allocatable[k]
                        for k in ("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory")
                        if k in allocatable
                    },
                    "suppressedMilliCPU": self.suppressed.get(node, 0),
                    "lsOverThreshold": has_prod and total * 100 > threshold * capacity,
                    "beStarvedPods": usage.get("_starved", zero)[0],
                }
            )
        return rows

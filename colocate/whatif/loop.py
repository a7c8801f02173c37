"""The step loop of `colocate whatif`: arrivals are admitted, usage is sampled into NodeMetrics, the
manager, the scheduler, the koordlet and the descheduler take their turn, evicted pods are
re-created by their controllers. The order of a step and what each record holds are in
docs/whatif.md. Everything is sorted and every random draw comes from the one seeded generator,
so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import random
import uuid
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from colocate.cluster.store import Object
from policies.apis.objects import json_copy
from scheduler_plugins.clock import format_time
from scheduler_plugins.descheduler.runner import StoreEvictions
from scheduler_plugins.koordlet.node_round import BECPU, cpu_capacity_milli

from .components import Admission, Koordlet, Manager, SimClock, descheduler_over, scheduler_over
from .inputs import Inputs
from .pods import RECREATING_OWNERS, PodFacts, PodIndex
from .records import ABSENT, BATCH_RESOURCES, RAW, StepRecord, allocatable_slot
from .usage import CPU_SUPPRESS, STARVED_PODS, SYSTEM_CPU, NodeUsage, Sampler
from .workload import Usage

#: the cyclic collector's young-generation threshold while a run steps (see `Run.run`)
RUN_GC_THRESHOLD: Final = 100_000

#: a strategy's status when the round has none (shared and never written)
_NO_STATUS: Final[Mapping[str, Any]] = {}


@lru_cache(maxsize=4096)
def _be_cpu(request_milli: int) -> BECPU:
    """BE's CPU as the loop hands it to a koordlet round: what BE pods request (the run has no
    cgroups to read usage or limit from). One shared value per request (immutable; requests repeat
    across nodes and steps), instead of one built per node per step."""
    return BECPU(0, request_milli, None)


@dataclass(frozen=True)
class RunOptions:
    start: float
    duration: float
    step: float
    seed: int = 0
    koordlet_gates: str | None = None
    #: installed admission plugins enabled in the chain, as `serve --admission-plugins` enables them
    admission_plugins: tuple[str, ...] = ()


class Run:
    """One timeline over one set of profiles."""

    def __init__(self, inputs: Inputs, profiles: list[Object], options: RunOptions) -> None:
        self.options = options
        self.rand = random.Random(options.seed)
        self.clock = SimClock(options.start)
        self.store = store = inputs.fresh_store(profiles)
        self.pods = PodIndex(store)
        self.workload = inputs.workload
        self.admission = Admission(store, self.rand, options.admission_plugins)
        self.manager = Manager(store, self.clock)
        self.scheduler = scheduler_over(store, inputs.scheduler_config, self.clock)
        self.koordlet = Koordlet(options.koordlet_gates, self.clock)
        self.descheduler = descheduler_over(store, inputs.descheduler_config, self.clock)
        self.nodes = sorted(o["metadata"]["name"] for o in store.objects("Node"))
        self.node_order = {node: index for index, node in enumerate(self.nodes)}
        #: per node: the Node object last seen, its batch allocatable slots, those kept as written,
        #: its cpu capacity (the store replaces an object when it changes)
        self._node_facts: dict[str, tuple[Object | None, tuple[int, int], tuple[tuple[int, Any], ...], int]] = {}
        self.capacity = {n: cpu_capacity_milli(store.get("Node", ("", n)) or {}) for n in self.nodes}
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
        #: placed pods with a lifetime, by when it is over (`_finish`)
        self.ending: list[tuple[float, int, str, PodFacts]] = []
        self.pushed = itertools.count()
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
        self.pods.set_facts(facts.key, facts)
        return facts

    # --- one step ----------------------------------------------------------------------------
    def run(self) -> list[StepRecord]:
        steps = []
        count = int(self.options.duration // self.options.step)
        if count * self.options.step < self.options.duration:
            count += 1
        queue = iter(self.arrivals)
        upcoming = next(queue, None)
        thresholds = gc.get_threshold()
        # a step allocates some hundred thousand dicts and lists that reference counting frees; the
        # young generation's default threshold (700) made the collector run thousands of times a
        # step for nothing (~5 % of a 1,000-node run); it is restored when the run ends
        gc.set_threshold(RUN_GC_THRESHOLD, *thresholds[1:])
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
            gc.set_threshold(*thresholds)
        end = self.options.start + count * self.options.step
        # still waiting at the end: counted with the wait so far (else a run that never places them looks good)
        self.pending_seconds.extend(
            end - since for key, since in sorted(self.pending_since.items()) if key in self.pods.pending
        )
        return steps

    def step(self, now: float, due: list[tuple[float, str, int, Any]]) -> StepRecord:
        admitted, denied, denials = self._arrive(now, due)
        self._finish(now)
        used = self.sampler.sample(now)
        self.manager.round()
        placements, unqueued, waiting = self.scheduler.step()
        placed = 0
        for placement in placements:
            if placement.scheduled:
                placed += 1
                since = self.pending_since.pop(placement.pod, now)
                self.pending_seconds.append(now - since)
                facts = self.pods.facts.get(placement.pod)
                if facts is not None:
                    facts.started = now
                    if facts.lifetime is not None:
                        heapq.heappush(self.ending, (now + facts.lifetime, next(self.pushed), placement.pod, facts))
        reasons: dict[str, int] = {}
        for placement in [*unqueued, *placements, *waiting]:
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
        round_ = self.descheduler.step(now)
        if round_ is not None:
            evictions += [
                {"pod": e.pod, "node": e.node, "by": f"descheduler/{e.plugin}", "reason": e.reason}
                for e in round_.evictions
            ]
            migrations = [m.as_dict() for m in round_.migrations]
        self._collect_gone()
        if self.koordlet.views_cached > 2 * (len(self.pods.node_of) + 64):
            self.koordlet.forget_pods({id(p) for pods in self.pods.by_node.values() for p in pods.values()})
        nodes, raw = self._nodes(used)
        return StepRecord(
            t=format_time(now),
            nodes=nodes,
            pending=len(self.pods.pending),
            pending_reasons=dict(sorted(reasons.items())),
            admitted=admitted,
            denied=denied,
            placed=placed,
            evictions=sorted(evictions, key=lambda e: (e["pod"], e["by"])),
            migrations=migrations,
            denials=denials,
            raw=raw,
        )

    def _arrive(self, now: float, due: list[tuple[float, str, int, Any]]) -> tuple[int, int, list[dict[str, str]]]:
        admitted = denied = 0
        denials = []
        batch = [(f.template, f.usage, f.lifetime, True) for f in self.recreate]
        self.recreate = []
        for _, name, number, arrival in due:
            for k in range(arrival.count):
                # the pod's template, kept for its re-creation: only ever copied, never changed
                pod = dict(arrival.template)
                pod["metadata"] = {**(pod.get("metadata") or {}), "name": f"{name}-{number * arrival.count + k}"}
                batch.append((pod, arrival.usage, arrival.lifetime, False))
        for template, usage, lifetime, recreated in batch:
            pod = json_copy(dict(template))
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
            self.pods.set_facts(key, facts)
            self.pending_since[key] = now
            self.store.put("Pod", result.object)
        self.totals["denied"] += denied
        return admitted, denied, denials

    def _finish(self, now: float) -> None:
        """Pods whose lifetime is over end (Succeeded) and are deleted, node by node in the run's
        order and by key within a node. `ending` holds every placed pod with a lifetime by its end;
        an entry whose pod is gone, or no longer bound to one of the run's nodes, is dropped."""
        done = []
        while self.ending and self.ending[0][0] <= now:
            _, _, key, facts = heapq.heappop(self.ending)
            node = self.pods.node_of.get(key)
            if self.pods.facts.get(key) is not facts or node not in self.node_order:
                continue
            if facts.lifetime is not None and facts.started is not None and now >= facts.started + facts.lifetime:
                done.append((self.node_order[node], key))
        for _, key in sorted(done):
            pod = self.pods.by_node[self.pods.node_of[key]][key]
            self.pods.drop_facts(key)
            self.store.delete("Pod", pod)

    def _koordlet(self, now: float) -> list[dict[str, Any]]:
        evictions: list[dict[str, Any]] = []
        evictor = StoreEvictions(self.store)
        store, get, round_of = self.store, self.store.get, self.koordlet.round
        objects_on, requests_on, suppressed = self.pods.objects_on, self.pods.requests_on, self.suppressed
        for node in self.nodes:
            obj = get("Node", ("", node))
            if obj is None:
                continue
            be_request = requests_on(node).best_effort_cpu
            report = round_of(obj, objects_on(node), store, _be_cpu(be_request) if be_request is not None else None)
            status = report.strategies.get(CPU_SUPPRESS) or _NO_STATUS
            suppressed[node] = int(status.get("suppressMilliCPU") or 0)
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

    def _nodes(self, used: Sequence[NodeUsage]) -> tuple[array[int], dict[tuple[int, int], Any]]:
        """The step's node slots (`records.FIELDS` per node) and the batch allocatable values kept
        as they were written."""
        values: list[int] = []
        raw: dict[tuple[int, int], Any] = {}
        get = self.store.get
        for index, node in enumerate(self.nodes):
            obj = get("Node", ("", node))
            facts = self._node_facts.get(node)
            if facts is None or facts[0] is not obj:
                facts = self._node_facts[node] = (obj, *_node_slots(obj or {}))
            _, batch, batch_raw, capacity = facts
            for slot, value in batch_raw:
                raw[(index, slot)] = value
            requests = self.pods.requests_on(node)
            usage = used[index]
            values += requests.by_class
            values += usage[:SYSTEM_CPU]
            values += batch
            over = False
            if requests.has_prod:
                threshold = self.koordlet.threshold_percent(node)
                total = usage[SYSTEM_CPU] + usage[0] + usage[2] + usage[4]
                over = total * 100 > threshold * capacity
            values += (self.suppressed.get(node, 0), over, usage[STARVED_PODS])
        return array("q", values), raw


def _node_slots(node: Object) -> tuple[tuple[int, int], tuple[tuple[int, Any], ...], int]:
    """A node object's batch allocatable slots, the values among them kept as written, and its cpu
    capacity (millicores)."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    slots = []
    raw = []
    for slot, resource in BATCH_RESOURCES:
        if resource not in allocatable:
            slots.append(ABSENT)
            continue
        number = allocatable_slot(allocatable[resource])
        if number == RAW:
            raw.append((slot, allocatable[resource]))
        slots.append(number)
    return (slots[0], slots[1]), tuple(raw), cpu_capacity_milli(node)

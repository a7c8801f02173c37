"""The run's own index of the store's pods: which run where, which wait, and what each one was
before admission (what its controller re-creates after an eviction)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from colocate.cluster.store import ClusterStore, Object, ObjectKey
from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.objects import node_name_of
from policies.apis.qos import defaulted_priority_class, defaulted_qos_class
from policies.apis.quantity import QuantityError, resource_list
from policies.apis.resources import pod_resources

from .workload import Usage

#: owners whose controller re-creates an evicted pod
RECREATING_OWNERS: Final = frozenset({"ReplicaSet", "Job", "StatefulSet"})
CLASSES: Final = ("prod", "batch", "free")
CLASS_INDEX: Final = {name: index for index, name in enumerate(CLASSES)}
BAND_CLASS: Final = {
    "koord-prod": "prod",
    "": "prod",
    "koord-mid": "batch",
    "koord-batch": "batch",
    "koord-free": "free",
}
#: the extended resources a band's requests are in, counted as cpu (millicores) and memory (bytes)
CPU_NAMES: Final = (RESOURCE_CPU, "kubernetes.io/batch-cpu", "kubernetes.io/mid-cpu")
MEMORY_NAMES: Final = (RESOURCE_MEMORY, "kubernetes.io/batch-memory", "kubernetes.io/mid-memory")


def _amounts(raw: Any) -> dict[str, int]:
    try:
        return resource_list(raw if isinstance(raw, Mapping) else None)
    except QuantityError:
        return {}


@dataclass
class PodFacts:
    """What the run needs of a pod, computed once when it is stored."""

    key: str
    cls: str
    best_effort: bool
    request_cpu: int
    request_memory: int
    limit_cpu: int | None
    limit_memory: int | None
    owner_kind: str
    usage: Usage | None
    template: Mapping[str, Any]
    arrived: float
    lifetime: float | None = None
    started: float | None = None

    @classmethod
    def of(cls, pod: Object, usage: Usage | None, template: Mapping[str, Any], arrived: float) -> PodFacts:
        requests = pod_resources(pod, "requests", _amounts)
        limits = pod_resources(pod, "limits", _amounts)
        cpu_limit = sum(limits.get(n, 0) for n in CPU_NAMES)
        memory_limit = sum(limits.get(n, 0) for n in MEMORY_NAMES)
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        owner = next((o for o in owners if isinstance(o, Mapping) and o.get("controller")), owners[0] if owners else {})
        meta = pod.get("metadata") or {}
        return cls(
            key=f"{meta.get('namespace') or 'default'}/{meta.get('name')}",
            cls=BAND_CLASS.get(str(defaulted_priority_class(pod)), "prod"),
            best_effort=str(defaulted_qos_class(pod)) == "BE",
            request_cpu=sum(requests.get(n, 0) for n in CPU_NAMES),
            request_memory=sum(requests.get(n, 0) for n in MEMORY_NAMES),
            limit_cpu=cpu_limit or None,
            limit_memory=memory_limit or None,
            owner_kind=str(owner.get("kind") or "") if isinstance(owner, Mapping) else "",
            usage=usage,
            template=template,
            arrived=arrived,
        )


@dataclass(frozen=True)
class NodeRequests:
    """What a node's pods request: cpu and memory by class (CLASSES order), whether prod pods run
    there, and the BE pods' cpu (None without BE pods)."""

    by_class: tuple[int, ...]
    has_prod: bool
    best_effort_cpu: int | None

    @classmethod
    def of(cls, pods: Iterable[PodFacts]) -> NodeRequests:
        by_class = [0] * (2 * len(CLASSES))
        has_prod = False
        best_effort_cpu = None
        for facts in pods:
            at = 2 * CLASS_INDEX[facts.cls]
            by_class[at] += facts.request_cpu
            by_class[at + 1] += facts.request_memory
            has_prod = has_prod or facts.cls == "prod"
            if facts.best_effort:
                best_effort_cpu = (best_effort_cpu or 0) + facts.request_cpu
        return cls(tuple(by_class), has_prod, best_effort_cpu)


class PodIndex:
    """Bound and pending pods of the store (a `StoreIndex`), with their facts; deleted pods are
    kept in `gone` until the loop has looked at them (evictions become re-creations)."""

    def __init__(self, store: ClusterStore) -> None:
        self.facts: dict[str, PodFacts] = {}
        self.by_node: dict[str, dict[str, Object]] = {}
        self.node_of: dict[str, str] = {}
        self.pending: dict[str, Object] = {}
        self.gone: dict[str, PodFacts] = {}
        #: a node's pods sorted by key, kept until one of them changes: every phase of a step walks
        #: them in this order (the draws of the run's generator follow it), most steps change few
        self._sorted: dict[str, tuple[tuple[tuple[str, Object], ...], tuple[Object, ...]]] = {}
        #: what a node's pods request, kept until its pods or their facts change
        self._requests: dict[str, NodeRequests] = {}
        store.subscribe(self)

    def set_facts(self, key: str, facts: PodFacts) -> None:
        self.facts[key] = facts
        self._changed(self.node_of.get(key))

    def drop_facts(self, key: str) -> None:
        self.facts.pop(key, None)
        self._changed(self.node_of.get(key))

    def _changed(self, node: str | None) -> None:
        if node is not None:
            self._sorted.pop(node, None)
            self._requests.pop(node, None)

    def requests_on(self, node: str) -> NodeRequests:
        """What the node's pods with facts request."""
        requests = self._requests.get(node)
        if requests is None:
            requests = self._requests[node] = NodeRequests.of(
                facts for key in self.by_node.get(node, ()) if (facts := self.facts.get(key)) is not None
            )
        return requests

    def _sorted_on(self, node: str) -> tuple[tuple[tuple[str, Object], ...], tuple[Object, ...]]:
        cached = self._sorted.get(node)
        if cached is None:
            items = tuple(sorted(self.by_node.get(node, {}).items()))
            cached = self._sorted[node] = (items, tuple(pod for _, pod in items))
        return cached

    def sorted_on(self, node: str) -> tuple[tuple[str, Object], ...]:
        """The node's (key, pod) in key order (the same tuple until one of them changes)."""
        return self._sorted_on(node)[0]

    def objects_on(self, node: str) -> tuple[Object, ...]:
        """The node's pods in key order (the same tuple until one of them changes)."""
        return self._sorted_on(node)[1]

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        if kind != "Pod":
            return
        name = f"{key[0] or 'default'}/{key[1]}"
        self._unplace(name)
        phase = (obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        node = node_name_of(obj)
        if node:
            self.by_node.setdefault(node, {})[name] = obj
            self.node_of[name] = node
            self._changed(node)
        else:
            self.pending[name] = obj

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        if kind != "Pod":
            return
        name = f"{key[0] or 'default'}/{key[1]}"
        self._unplace(name)
        facts = self.facts.pop(name, None)
        if facts is not None:
            self.gone[name] = facts

    def changes_applied(self) -> None:
        """Every change is applied as it comes."""

    def _unplace(self, name: str) -> None:
        self.pending.pop(name, None)
        node = self.node_of.pop(name, None)
        if node is not None:
            pods = self.by_node.get(node, {})
            pods.pop(name, None)
            self._changed(node)

"""The runtime quota tree (spec §8.2–§8.5): quota specs from the ElasticQuota objects, request and
used from the pods, runtime computed top-down from the cluster total.

The manager is fed events (quota put/deleted, pod added/removed, reserved/unreserved) and keeps
per-quota sums of its own pods incrementally; the tree (requests, guarantees, runtimes) is
recomputed as a whole, lazily, the first time it is read after something it depends on changed.
`used` changing marks it stale only when a guarantee or the system/default quotas depend on it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.constants import (
    DEFAULT_QUOTA_NAME,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PREEMPTIBLE,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from policies.elastic_quota.tree import QuotaInfo, allow_lent_resource, shared_weight
from policies.objects import labels_of
from policies.quantity import Quantity, scalar_of
from policies.quota_index import QuotaIndex
from scheduler_plugins.scheduler.plugins.elasticquota.args import ElasticQuotaArgs
from scheduler_plugins.scheduler.plugins.elasticquota.distribution import Share, distribute, scaled_mins
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector

SPECIAL_QUOTAS = (SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME)


def _scalars(resources: Mapping[str, Quantity]) -> Vector:
    return {name: scalar_of(name, q.canonical()) for name, q in resources.items()}


def _add(into: Vector, other: Mapping[str, int], sign: int = 1) -> None:
    """into += sign × other; a sum taken back to zero is dropped (a quota whose pods are gone asks
    for nothing rather than for "0")."""
    for name, amount in other.items():
        value = into.get(name, 0) + sign * amount
        if value or sign > 0:
            into[name] = value
        else:
            into.pop(name, None)


@dataclass(frozen=True)
class QuotaSpec:
    """What the tree needs of one ElasticQuota, in scheduler units."""

    name: str
    parent: str
    min: Vector
    max: Vector
    shared_weight: Vector
    allow_lent: bool = True
    is_parent: bool = False

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> QuotaSpec:
        info = QuotaInfo.of(obj, strict=False)
        return cls(info.name, info.parent, _scalars(info.min), _scalars(info.max),
                   _scalars(shared_weight(obj, info.max)), allow_lent_resource(obj),
                   labels_of(obj).get(LABEL_QUOTA_IS_PARENT) == "true")


@dataclass
class QuotaState:
    """One quota after a refresh; `request` is what it asks of its parent (before the max limit)."""

    spec: QuotaSpec
    request: Vector = field(default_factory=dict)
    limited_request: Vector = field(default_factory=dict)
    used: Vector = field(default_factory=dict)
    guaranteed: Vector = field(default_factory=dict)
    runtime: Vector = field(default_factory=dict)
    children: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _PodEntry:
    quota: str
    pod: PodInfo
    used: bool  # bound or reserved: counted in `used`
    transient: bool = False  # known only through Reserve (the extender's pod): dropped by Unreserve

    @property
    def non_preemptible(self) -> bool:
        return self.pod.labels.get(LABEL_QUOTA_PREEMPTIBLE) == "false"


class QuotaManager:
    def __init__(self, args: ElasticQuotaArgs, cluster_total: Callable[[], Mapping[str, int]],
                 guarantee_usage: bool = False) -> None:
        self.args = args
        self.cluster_total = cluster_total
        self.guarantee_usage = guarantee_usage
        #: whether a change of `used` changes any runtime (or a check that reads the tree's used)
        self._used_matters = guarantee_usage or args.enable_check_parent_quota
        self._objects: dict[str, Mapping[str, Any]] = {}
        self._specs: dict[str, QuotaSpec] = {}
        self._index = QuotaIndex()
        self._pods: dict[str, _PodEntry] = {}
        #: per quota: Σ request of its live pods, Σ request of its used pods, and the same for
        #: non-preemptible pods
        self.pod_request: dict[str, Vector] = {}
        self.pod_used: dict[str, Vector] = {}
        self.np_used: dict[str, Vector] = {}
        self._states: dict[str, QuotaState] = {}
        self._stale = True
        self._last_total: dict[str, int] | None = None
        self._rebuild_specs()

    # --- quotas ----------------------------------------------------------------------------------
    def set_quota(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """An ElasticQuota was put (obj) or deleted (None); quota names are cluster-unique."""
        if obj is None:
            self._objects.pop(name, None)
        else:
            self._objects[name] = obj
        self._rebuild_specs()

    def _rebuild_specs(self) -> None:
        specs = {}
        for obj in self._objects.values():
            spec = QuotaSpec.of(obj)
            if spec.name != ROOT_QUOTA_NAME:
                specs[spec.name] = spec
        system = specs.get(SYSTEM_QUOTA_NAME)
        default = specs.get(DEFAULT_QUOTA_NAME)
        specs[SYSTEM_QUOTA_NAME] = QuotaSpec(SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME, system.min if system else {},
                                             dict(self.args.system_quota_group_max), {})
        specs[DEFAULT_QUOTA_NAME] = QuotaSpec(DEFAULT_QUOTA_NAME, ROOT_QUOTA_NAME, default.min if default else {},
                                              dict(self.args.default_quota_group_max), {})
        for name, spec in specs.items():  # a parent that does not exist: hang the quota on the root
            if spec.parent not in specs and spec.parent != ROOT_QUOTA_NAME:
                specs[name] = QuotaSpec(spec.name, ROOT_QUOTA_NAME, spec.min, spec.max, spec.shared_weight,
                                        spec.allow_lent, spec.is_parent)
        self._specs = specs
        self._index = QuotaIndex.build([*self._objects.values(),
                                        *({"metadata": {"name": n}} for n in SPECIAL_QUOTAS)])
        for key, entry in list(self._pods.items()):
            quota = self.quota_of(entry.pod)
            if quota != entry.quota:
                self._account(entry, -1)
                self._pods[key] = entry = _PodEntry(quota, entry.pod, entry.used)
                self._account(entry, +1)
        self._stale = True

    def quota_of(self, pod: PodInfo) -> str:
        """The pod's quota: its label, else its namespace's quota, else the default quota."""
        return self._index.quota_of_pod(pod.obj, pod.namespace)

    def spec(self, name: str) -> QuotaSpec | None:
        return self._specs.get(name)

    # --- pods ------------------------------------------------------------------------------------
    def _account(self, entry: _PodEntry, sign: int, request: bool = True) -> None:
        """Add (sign 1) or take away (-1) the pod's requests in its quota's sums; `request` False
        touches only the used sums (Reserve/Unreserve)."""
        requests = entry.pod.requests
        if not requests:
            return
        if request:
            _add(self.pod_request.setdefault(entry.quota, {}), requests, sign)
            self._stale = True
        if entry.used:
            _add(self.pod_used.setdefault(entry.quota, {}), requests, sign)
            if entry.non_preemptible:
                _add(self.np_used.setdefault(entry.quota, {}), requests, sign)
            if self._used_matters or entry.quota in SPECIAL_QUOTAS:
                self._stale = True

    def add_pod(self, pod: PodInfo, used: bool | None = None) -> None:
        """A live pod (pending or bound); re-adding replaces it. `used` defaults to "bound"."""
        old = self._pods.pop(pod.key, None)
        if old is not None:
            self._account(old, -1)
        keep_used = old is not None and old.used
        entry = _PodEntry(self.quota_of(pod), pod, bool(pod.node_name) or keep_used if used is None else used)
        self._pods[pod.key] = entry
        self._account(entry, +1)

    def remove_pod(self, key: str) -> None:
        old = self._pods.pop(key, None)
        if old is not None:
            self._account(old, -1)

    def knows(self, key: str) -> bool:
        return key in self._pods

    def set_used(self, pod: PodInfo, used: bool) -> None:
        """Reserve (True) / Unreserve (False): count the pod in its quota's used or stop."""
        entry = self._pods.get(pod.key)
        if entry is None:
            if used:
                self.add_pod(pod, used=True)
                self._pods[pod.key].transient = True
            return
        if entry.transient and not used:
            self.remove_pod(pod.key)
            return
        if entry.used == used or (not used and entry.pod.node_name):
            return
        self._account(entry, -1, request=False)
        entry.used = used
        self._account(entry, +1, request=False)

    # --- the tree --------------------------------------------------------------------------------
    def states(self, fresh_used: bool = False) -> Mapping[str, QuotaState]:
        """Every quota after a refresh, the root first, then by name. The `used` sums of the tree
        follow pod changes only when something depends on them; `fresh_used` recomputes anyway."""
        total = dict(self.cluster_total())
        if self._stale or fresh_used or total != self._last_total:
            self._states = self._compute(total)
            self._last_total = total
            self._stale = False
        return self._states

    def _compute(self, total: Mapping[str, int]) -> dict[str, QuotaState]:
        specs = self._specs
        root = QuotaState(QuotaSpec(ROOT_QUOTA_NAME, "", {}, {}, {}))
        states = {ROOT_QUOTA_NAME: root}
        for name in sorted(specs):
            states[name] = QuotaState(specs[name], used=dict(self.pod_used.get(name, {})))
        for name in sorted(specs):
            states[specs[name].parent].children.append(name)
        keys = sorted({r for n, s in specs.items() if n not in SPECIAL_QUOTAS for r in s.max})
        order = self._post_order(states)
        for name in order:  # children before their parent
            state = states[name]
            spec = state.spec
            request = dict(self.pod_request.get(name, {}))
            allocated = dict(self.pod_used.get(name, {}))
            for child in state.children:
                if child in SPECIAL_QUOTAS:
                    continue
                _add(request, states[child].limited_request)
                _add(state.used, states[child].used)
                _add(allocated, states[child].guaranteed)
            if not spec.allow_lent:
                for r, amount in spec.min.items():
                    request[r] = max(request.get(r, 0), amount)
            state.request = request
            state.limited_request = {r: min(v, spec.max[r]) if r in spec.max else v for r, v in request.items()}
            if self.guarantee_usage:
                state.guaranteed = {r: max(allocated.get(r, 0), spec.min.get(r, 0))
                                    for r in {*allocated, *spec.min}}
        special_used: Vector = {}
        for name in SPECIAL_QUOTAS:
            _add(special_used, states[name].used)
            states[name].runtime = dict(specs[name].max)
        root.runtime = {r: max(total.get(r, 0) - special_used.get(r, 0), 0) for r in keys}
        root.request = {r: sum(states[c].limited_request.get(r, 0) for c in root.children if c not in SPECIAL_QUOTAS)
                        for r in keys}
        for name in reversed(order):  # parents before their children
            children = [c for c in states[name].children if c not in SPECIAL_QUOTAS]
            if children:
                self._distribute(states[name].runtime, [states[c] for c in children], keys)
        return states

    def _distribute(self, parent_runtime: Mapping[str, int], children: list[QuotaState], keys: Iterable[str]) -> None:
        for r in keys:
            total = parent_runtime.get(r, 0)
            mins = {c.spec.name: c.spec.min.get(r, 0) for c in children}
            if self.args.enable_min_quota_scale:
                mins = scaled_mins(total, mins)
            shares = [Share(c.spec.name, c.limited_request.get(r, 0), mins[c.spec.name],
                            c.guaranteed.get(r, 0), c.spec.shared_weight.get(r, 0), c.spec.allow_lent)
                      for c in children]
            runtime = distribute(total, shares)
            for child in children:
                child.runtime[r] = runtime[child.spec.name]

    @staticmethod
    def _post_order(states: Mapping[str, QuotaState]) -> list[str]:
        order: list[str] = []
        stack = [(ROOT_QUOTA_NAME, False)]
        seen = set()
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(name)
                continue
            if name in seen:  # a cycle in the parent labels: count each quota once
                continue
            seen.add(name)
            stack.append((name, True))
            stack.extend((c, False) for c in reversed(states[name].children))
        return order

    # --- admission -------------------------------------------------------------------------------
    def non_preemptible_used(self, name: str) -> Vector:
        return self.np_used.get(name, {})

"""The runtime quota tree (Koordinator's `elasticquota/core/group_quota_manager.go`): quota specs
from the ElasticQuota objects, request and used from the pods, runtime computed top-down from the
cluster total.

The manager is fed events (quota put/deleted, pod added/removed, reserved/unreserved) and keeps
per-quota sums of its own pods incrementally. Everything derived is recomputed lazily, as little
as a read needs (Koordinator refreshes the runtime along the path root -> quota the same way):

* sums (request, limited request, used, guarantee) only for the quotas whose pods changed and their
  ancestors, when the tree is next read;
* a parent's distribution among its children only when it is read and something any runtime
  depends on (a limited request, a guarantee, a min, the total) changed since it was computed.

A pod bound or reserved changes `used` but no limited request: no distribution is recomputed,
unless the guarantee gate or the system/default quotas (whose use shrinks the total) make it count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.admission.elastic_quota.tree import QuotaInfo, allow_lent_resource, shared_weight
from policies.admission.quota_index import QuotaIndex
from policies.apis.constants import (
    DEFAULT_QUOTA_NAME,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PREEMPTIBLE,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from policies.apis.objects import labels_of
from policies.apis.quantity import Quantity, scalar_of
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
        return cls(
            info.name,
            info.parent,
            _scalars(info.min),
            _scalars(info.max),
            _scalars(shared_weight(obj, info.max)),
            allow_lent_resource(obj),
            labels_of(obj).get(LABEL_QUOTA_IS_PARENT) == "true",
        )


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
    depth: int = 0


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
    def __init__(
        self, args: ElasticQuotaArgs, cluster_total: Callable[[], Mapping[str, int]], guarantee_usage: bool = False
    ) -> None:
        self.args = args
        self.cluster_total = cluster_total
        self.guarantee_usage = guarantee_usage
        self._objects: dict[str, Mapping[str, Any]] = {}
        self._specs: dict[str, QuotaSpec] = {}
        self._specs_stale = True
        self._index = QuotaIndex()
        self._pods: dict[str, _PodEntry] = {}
        #: per quota: Σ request of its live pods, Σ request of its used pods, and the same for
        #: non-preemptible pods
        self.pod_request: dict[str, Vector] = {}
        self.pod_used: dict[str, Vector] = {}
        self.np_used: dict[str, Vector] = {}
        self._states: dict[str, QuotaState] = {}
        self._keys: list[str] = []
        self._dirty: set[str] = set()  # quotas whose own pod sums changed since the last refresh
        self._version = 0  # bumped whenever something a distribution depends on changes
        self._distributed: dict[str, int] = {}  # parent -> version its children's runtimes are of

    # --- quotas ----------------------------------------------------------------------------------
    def set_quota(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """An ElasticQuota was put (obj) or deleted (None); quota names are cluster-unique. The
        tree is rebuilt when next read (a burst of quota events costs one rebuild)."""
        if obj is None:
            self._objects.pop(name, None)
        else:
            self._objects[name] = obj
        self._specs_stale = True

    def _ensure_specs(self) -> None:
        if self._specs_stale:
            self._specs_stale = False
            self._rebuild_specs()

    def _rebuild_specs(self) -> None:
        specs = {}
        for obj in self._objects.values():
            spec = QuotaSpec.of(obj)
            if spec.name != ROOT_QUOTA_NAME:
                specs[spec.name] = spec
        system = specs.get(SYSTEM_QUOTA_NAME)
        default = specs.get(DEFAULT_QUOTA_NAME)
        specs[SYSTEM_QUOTA_NAME] = QuotaSpec(
            SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME, system.min if system else {}, dict(self.args.system_quota_group_max), {}
        )
        specs[DEFAULT_QUOTA_NAME] = QuotaSpec(
            DEFAULT_QUOTA_NAME,
            ROOT_QUOTA_NAME,
            default.min if default else {},
            dict(self.args.default_quota_group_max),
            {},
        )
        for name, spec in specs.items():  # a parent that does not exist: hang the quota on the root
            if spec.parent not in specs and spec.parent != ROOT_QUOTA_NAME:
                specs[name] = QuotaSpec(
                    spec.name, ROOT_QUOTA_NAME, spec.min, spec.max, spec.shared_weight, spec.allow_lent, spec.is_parent
                )
        self._specs = specs
        self._index = QuotaIndex.build([*self._objects.values(), *({"metadata": {"name": n}} for n in SPECIAL_QUOTAS)])
        for key, entry in list(self._pods.items()):
            quota = self._index.quota_of_pod(entry.pod.obj, entry.pod.namespace)
            if quota != entry.quota:
                self._account(entry, -1)
                self._pods[key] = entry = _PodEntry(quota, entry.pod, entry.used, entry.transient)
                self._account(entry, +1)
        self._build_tree()

    def _build_tree(self) -> None:
        specs = self._specs
        states = {ROOT_QUOTA_NAME: QuotaState(QuotaSpec(ROOT_QUOTA_NAME, "", {}, {}, {}))}
        for name in sorted(specs):
            states[name] = QuotaState(specs[name])
        for name in sorted(specs):
            states[specs[name].parent].children.append(name)
        self._keys = sorted({r for n, s in specs.items() if n not in SPECIAL_QUOTAS for r in s.max})
        for name in SPECIAL_QUOTAS:
            states[name].runtime = dict(specs[name].max)
        seen: set[str] = set()
        stack = [(ROOT_QUOTA_NAME, 0)]
        while stack:  # depths; a cycle in the parent labels leaves its quotas out of the tree
            name, depth = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            states[name].depth = depth
            stack.extend((c, depth + 1) for c in states[name].children)
        for name in list(states):
            if name not in seen:
                del states[name]
        for state in states.values():
            state.children = [c for c in state.children if c in states]
        self._states = states
        self._dirty = set(states)
        self._version += 1
        self._distributed.clear()

    def quota_of(self, pod: PodInfo) -> str:
        """The pod's quota: its label, else its namespace's quota, else the default quota."""
        self._ensure_specs()
        return self._index.quota_of_pod(pod.obj, pod.namespace)

    def spec(self, name: str) -> QuotaSpec | None:
        self._ensure_specs()
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
        if entry.used:
            _add(self.pod_used.setdefault(entry.quota, {}), requests, sign)
            if entry.non_preemptible:
                _add(self.np_used.setdefault(entry.quota, {}), requests, sign)
        self._dirty.add(entry.quota)

    def add_pod(self, pod: PodInfo, used: bool | None = None) -> None:
        """A live pod (pending or bound); re-adding replaces it. `used` defaults to "bound" (or
        reserved before)."""
        quota = self.quota_of(pod)
        old = self._pods.get(pod.key)
        now_used = (bool(pod.node_name) or (old is not None and old.used)) if used is None else used
        if old is not None and old.quota == quota and old.pod.requests == pod.requests:
            old.pod, old.transient = pod, False  # the same pod bound or patched: only `used` may change
            if old.used != now_used:
                self._account(old, -1, request=False)
                old.used = now_used
                self._account(old, +1, request=False)
            return
        if old is not None:
            self._account(self._pods.pop(pod.key), -1)
        entry = _PodEntry(quota, pod, now_used)
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
    def _refresh_sums(self) -> None:
        """Recompute the sums of the dirty quotas and their ancestors, deepest first; bump the
        version when a limited request, a guarantee or the total changed."""
        self._ensure_specs()
        states = self._states
        if self._dirty:
            todo: set[str] = set()
            for name in self._dirty:
                while name and name in states and name not in todo:
                    todo.add(name)
                    name = states[name].spec.parent
            self._dirty = set()
            for name in sorted(todo, key=lambda n: -states[n].depth):
                self._recompute(states[name])
        total = dict(self.cluster_total())
        special_used: Vector = {}
        for name in SPECIAL_QUOTAS:
            _add(special_used, states[name].used)
        root = states[ROOT_QUOTA_NAME]
        runtime = {r: max(total.get(r, 0) - special_used.get(r, 0), 0) for r in self._keys}
        if runtime != root.runtime:
            root.runtime = runtime
            self._version += 1

    def _recompute(self, state: QuotaState) -> None:
        spec, name = state.spec, state.spec.name
        request = dict(self.pod_request.get(name, {}))
        used = dict(self.pod_used.get(name, {}))
        allocated = dict(used)
        for child in state.children:
            if child in SPECIAL_QUOTAS:
                continue
            other = self._states[child]
            _add(request, other.limited_request)
            _add(used, other.used)
            _add(allocated, other.guaranteed)
        if not spec.allow_lent:
            for r, amount in spec.min.items():
                request[r] = max(request.get(r, 0), amount)
        limited = {r: min(v, spec.max[r]) if r in spec.max else v for r, v in request.items()}
        guaranteed = state.guaranteed
        if self.guarantee_usage:
            guaranteed = {r: max(allocated.get(r, 0), spec.min.get(r, 0)) for r in {*allocated, *spec.min}}
        if limited != state.limited_request or guaranteed != state.guaranteed:
            self._version += 1
        state.request, state.limited_request, state.used, state.guaranteed = request, limited, used, guaranteed

    def _runtime_at(self, parent: str) -> None:
        """Make the runtimes of `parent`'s children current (its own must be)."""
        if self._distributed.get(parent) == self._version:
            return
        state = self._states[parent]
        children = [self._states[c] for c in state.children if c not in SPECIAL_QUOTAS]
        for r in self._keys:
            total = state.runtime.get(r, 0)
            mins = {c.spec.name: c.spec.min.get(r, 0) for c in children}
            if self.args.enable_min_quota_scale:
                mins = scaled_mins(total, mins)
            shares = [
                Share(
                    c.spec.name,
                    c.limited_request.get(r, 0),
                    mins[c.spec.name],
                    c.guaranteed.get(r, 0),
                    c.spec.shared_weight.get(r, 0),
                    c.spec.allow_lent,
                )
                for c in children
            ]
            runtime = distribute(total, shares)
            for child in children:
                child.runtime[r] = runtime[child.spec.name]
        self._distributed[parent] = self._version

    def state_of(self, name: str) -> QuotaState | None:
        """One quota with its runtime current: the distributions along root -> quota only."""
        self._refresh_sums()
        state = self._states.get(name)
        if state is None:
            return None
        path = []
        parent = state.spec.parent
        while parent and parent in self._states:
            path.append(parent)
            parent = self._states[parent].spec.parent
        if name not in SPECIAL_QUOTAS:
            for ancestor in reversed(path):
                self._runtime_at(ancestor)
        return state

    def states(self) -> Mapping[str, QuotaState]:
        """Every quota with its sums and runtime current (the whole tree: the report)."""
        self._refresh_sums()
        for name, state in sorted(self._states.items(), key=lambda kv: kv[1].depth):
            if state.children:
                self._runtime_at(name)
        return self._states

    # --- admission -------------------------------------------------------------------------------
    def assigned_pods(self, name: str) -> list[PodInfo]:
        """The pods counted in the quota's used (bound or reserved): what the revoker may evict."""
        return [e.pod for e in self._pods.values() if e.quota == name and e.used]

    def non_preemptible_used(self, name: str) -> Vector:
        return self.np_used.get(name, {})

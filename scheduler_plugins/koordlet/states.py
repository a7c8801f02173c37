"""The states the strategies read — the Node, its NodeSLO, its Pods, its NodeResourceTopology — and
the states-informer callbacks (Koordinator's `pkg/koordlet/statesinformer/`).

`NodeState` is an immutable snapshot taken at the start of a round. `NodeStates` is an index of
the shared `ClusterStore` (fed by the API server with `spec.nodeName=<node>`, or by a node
directory) that keeps the objects of one node and signals the callbacks.

Callbacks: `register(type, name, fn)`; `send(type)` puts a signal in a one-slot queue per type,
dropped if a run is already pending, so a burst of changes costs one run. A worker per type runs
that type's callbacks one after the other with its object: the NodeSLO's spec (NodeSLOSpec), none
(AllPods), the NodeResourceTopology (NodeTopology), the Node (NodeMetadata); a None object skips the
run.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from colocate.cluster.store import ClusterStore, Object, ObjectKey
from policies.apis.constants import NODE_RESOURCE_TOPOLOGY_KIND
from policies.apis.field_errors import ConfigError
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from policies.apis.objects import name_of, spec_of
from scheduler_plugins.koordlet.nodeslo import HostApplication, NodeSLO
from scheduler_plugins.koordlet.slo_keeper import NodeSLOKeeper

log = logging.getLogger("colocate.koordlet.states")

KOORDLET_KINDS = ("Node", NODE_SLO_KIND, "Pod", NODE_RESOURCE_TOPOLOGY_KIND)


@dataclass(frozen=True, slots=True)  # slots: built every round, one allocation and no dict
class NodeState:
    node: Mapping[str, Any] | None
    node_slo: NodeSLO | None
    node_slo_error: str | None
    pods: tuple[Mapping[str, Any], ...]
    topology: Mapping[str, Any] | None = None
    node_metric: Mapping[str, Any] | None = None

    @property
    def node_name(self) -> str:
        return name_of(self.node) if self.node else ""


def node_state(store: ClusterStore, node_name: str, keeper: NodeSLOKeeper | None = None) -> NodeState:
    """The node's objects in `store` now (pods bound to other nodes are left out). With `keeper`, a
    NodeSLO that fails validation leaves the last good one in place (and `node_slo_error` says so)."""
    node = store.get("Node", ("", node_name))
    slo_obj = store.get(NODE_SLO_KIND, ("", node_name))
    slo, error = None, None
    if slo_obj is not None and keeper is not None:
        slo, error = keeper.parse(slo_obj)
    elif slo_obj is not None:
        try:
            slo = NodeSLO.parse(slo_obj)
        except ConfigError as exc:
            error = f"NodeSLO {node_name}: {exc}"
    pods = tuple(p for p in store.objects("Pod") if spec_of(p).get("nodeName") == node_name)
    return NodeState(
        node,
        slo,
        error,
        pods,
        store.get(NODE_RESOURCE_TOPOLOGY_KIND, ("", node_name)),
        store.get(NODE_METRIC_KIND, ("", node_name)),
    )


class CallbackType(enum.StrEnum):
    NODE_SLO_SPEC = "NodeSLOSpec"
    ALL_PODS = "AllPods"
    NODE_TOPOLOGY = "NodeTopology"
    NODE_METADATA = "NodeMetadata"


@dataclass(frozen=True)
class CallbackTarget:
    pods: tuple[Mapping[str, Any], ...]
    host_applications: tuple[HostApplication, ...]


Callback = Callable[[CallbackType, Any, CallbackTarget], Awaitable[None] | None]


@dataclass
class _Registered:
    name: str
    description: str
    fn: Callback


@dataclass
class Callbacks:
    """The per-type callbacks and their one-slot signal queues."""

    state: Callable[[], NodeState]
    _registered: dict[CallbackType, list[_Registered]] = field(default_factory=dict)
    _slots: dict[CallbackType, asyncio.Queue[None]] = field(default_factory=dict)
    runs: dict[CallbackType, int] = field(default_factory=dict)

    def register(self, type_: CallbackType | str, name: str, description: str, fn: Callback) -> None:
        try:
            kind = CallbackType(type_)
        except ValueError:
            raise ValueError(f"unknown callback type {type_!r}") from None
        entries = self._registered.setdefault(kind, [])
        if any(e.name == name for e in entries):
            raise ValueError(f"callback {name!r} already registered for {kind}")
        entries.append(_Registered(name, description, fn))

    def _slot(self, kind: CallbackType) -> asyncio.Queue[None]:
        if kind not in self._slots:
            self._slots[kind] = asyncio.Queue(maxsize=1)
        return self._slots[kind]

    def send(self, type_: CallbackType) -> bool:
        """Signal `type_`; False when a run is already pending (the signal is dropped)."""
        try:
            self._slot(type_).put_nowait(None)
        except asyncio.QueueFull:
            return False
        return True

    def _object(self, kind: CallbackType, state: NodeState) -> Any:
        if kind is CallbackType.NODE_SLO_SPEC:
            return state.node_slo
        if kind is CallbackType.ALL_PODS:
            return {}
        if kind is CallbackType.NODE_TOPOLOGY:
            return state.topology
        return state.node

    async def run_once(self, kind: CallbackType) -> None:
        state = self.state()
        obj = self._object(kind, state)
        if obj is None:
            return
        target = CallbackTarget(state.pods, state.node_slo.host_applications if state.node_slo else ())
        self.runs[kind] = self.runs.get(kind, 0) + 1
        for entry in self._registered.get(kind, []):
            try:
                result = entry.fn(kind, obj, target)
                if result is not None:
                    await result
            except Exception:
                log.exception("callback %s (%s) failed", entry.name, kind)

    async def worker(self, kind: CallbackType) -> None:
        slot = self._slot(kind)
        while True:
            await slot.get()
            await self.run_once(kind)

    async def run(self) -> None:
        """Run a worker per type until cancelled."""
        await asyncio.gather(*(self.worker(kind) for kind in CallbackType))


_KIND_SIGNALS = {
    "Node": CallbackType.NODE_METADATA,
    NODE_SLO_KIND: CallbackType.NODE_SLO_SPEC,
    "Pod": CallbackType.ALL_PODS,
    NODE_RESOURCE_TOPOLOGY_KIND: CallbackType.NODE_TOPOLOGY,
}


class NodeStates:
    """A `StoreIndex` that turns changes of the node's objects into callback signals on the loop."""

    def __init__(
        self,
        store: ClusterStore,
        node_name: str,
        loop: asyncio.AbstractEventLoop,
        keeper: NodeSLOKeeper | None = None,
    ) -> None:
        self.store, self.node_name, self.loop, self.keeper = store, node_name, loop, keeper
        self.callbacks = Callbacks(self.state)
        self._pending: set[CallbackType] = set()

    def state(self) -> NodeState:
        return node_state(self.store, self.node_name, self.keeper)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        self._note(kind)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        self._note(kind)

    def _note(self, kind: str) -> None:
        signal = _KIND_SIGNALS.get(kind)
        if signal is not None:
            self._pending.add(signal)

    def changes_applied(self) -> None:
        pending, self._pending = self._pending, set()
        for signal in pending:
            self.loop.call_soon_threadsafe(self.callbacks.send, signal)

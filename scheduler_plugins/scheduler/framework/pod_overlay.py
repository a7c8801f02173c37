"""The pods a cycle removed from or added to nodes, on top of a plugin's own per-node cache.

A plugin that keeps what each pod holds on a node (NodeNUMAResource's CPUs, DeviceShare's GPUs)
implements its PreFilter extensions with one of these in the CycleState: `RemovePod` hides a
victim's holding, `AddPod` gives it back (or adds a pod's holding that the cache lacks), and the
plugin's Filter reads `view(node, cache)` instead of its cache (Koordinator's `preemptibleState` /
`preemptibleDevices`, which are deltas of the same kind). It is `StateData`: preemption's trial on
one node never leaks into another's. A cycle without extensions has no overlay and reads the cache
as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from scheduler_plugins.scheduler.framework.cycle_state import CycleState

T = TypeVar("T")


class PodOverlay(Generic[T]):
    __slots__ = ("removed", "added")

    def __init__(self) -> None:
        self.removed: dict[str, set[str]] = {}
        self.added: dict[str, dict[str, T]] = {}

    def clone(self) -> PodOverlay[T]:
        other: PodOverlay[T] = PodOverlay()
        other.removed = {node: set(keys) for node, keys in self.removed.items()}
        other.added = {node: dict(held) for node, held in self.added.items()}
        return other

    def remove(self, node_name: str, key: str) -> None:
        """The pod no longer holds anything on the node."""
        added = self.added.get(node_name)
        if added is not None:
            added.pop(key, None)
        self.removed.setdefault(node_name, set()).add(key)

    def add(self, node_name: str, key: str, held: T | None) -> None:
        """The pod holds `held` on the node again (None: what the cache says it holds)."""
        removed = self.removed.get(node_name)
        if removed is not None:
            removed.discard(key)
        if held is not None:
            self.added.setdefault(node_name, {})[key] = held

    def view(self, node_name: str, cache: Mapping[str, T]) -> Mapping[str, T]:
        """What the pods hold on the node in this cycle: `cache` less the removed, plus the added."""
        removed = self.removed.get(node_name)
        added = self.added.get(node_name)
        if not removed and not added:
            return cache
        out = {key: held for key, held in cache.items() if not removed or key not in removed}
        if added:
            out.update(added)
        return out


def overlay_in(state: CycleState, key: str) -> PodOverlay[Any]:
    """The cycle's overlay under the plugin's `key`, written on first use (RemovePod, AddPod)."""
    overlay: PodOverlay[Any] | None = state.read(key)
    if overlay is None:
        overlay = PodOverlay()
        state.write(key, overlay)
    return overlay


def give_back_in_cycle(
    state: CycleState, prefilter_key: str, key: str, node_name: str, pod_key: str, cache: Mapping[str, Any]
) -> None:
    """AddPod: the pod holds on the node again what the plugin's `cache` says it holds. Only in a
    cycle the plugin's PreFilter ran in (state under `prefilter_key`), and only for a pod the cache
    has: one holding nothing here (a nominated pod not bound yet) adds nothing, as Koordinator's
    AddPod."""
    if state.read(prefilter_key) is not None and pod_key in cache:
        overlay_in(state, key).add(node_name, pod_key, None)


def free_in_cycle(
    state: CycleState, prefilter_key: str, key: str, node_name: str, pod_key: str, cache: Mapping[str, Any]
) -> None:
    """RemovePod: what the pod holds on the node is free in this cycle (a preemption's victim);
    under the same conditions as `give_back_in_cycle`."""
    if state.read(prefilter_key) is not None and pod_key in cache:
        overlay_in(state, key).remove(node_name, pod_key)


def held_in_cycle(state: CycleState | None, key: str, node_name: str, cache: Mapping[str, T]) -> Mapping[str, T]:
    """What the pods hold on the node as this cycle's overlay under `key` left it: the cache
    itself when the cycle has none (no preemption trial)."""
    overlay: PodOverlay[T] | None = state.read(key) if state is not None else None
    return overlay.view(node_name, cache) if overlay is not None else cache

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
from typing import Generic, TypeVar

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

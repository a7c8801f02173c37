"""The current cluster snapshot, swapped atomically by a source and read by every request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from policies.admission.snapshot import EMPTY_SNAPSHOT, ClusterSnapshot


class LiveReads(Protocol):
    """Reads from the API server for what a snapshot cannot answer yet (`webhook.live_reads`)."""

    def wanted(self, kind: str) -> bool: ...

    async def snapshot_for(self, body: bytes, snapshot: ClusterSnapshot) -> ClusterSnapshot: ...


@dataclass
class StateHolder:
    """Holds the latest snapshot. `ready` turns true once the first complete state is loaded."""

    snapshot: ClusterSnapshot = EMPTY_SNAPSHOT
    ready: bool = False
    generation: int = 0
    #: per kind, how long its watch has been broken (live mode: the store's; files: never)
    stale_seconds: Callable[[], Mapping[str, float]] = field(default=lambda: {})
    #: reads from the API server for what the snapshot cannot answer yet (live mode only)
    live_reads: LiveReads | None = None

    def publish(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.generation += 1
        self.ready = True

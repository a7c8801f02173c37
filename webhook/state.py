"""The current cluster snapshot, swapped atomically by a source and read by every request."""

from __future__ import annotations

from dataclasses import dataclass

from policies.admission.snapshot import EMPTY_SNAPSHOT, ClusterSnapshot


@dataclass
class StateHolder:
    """Holds the latest snapshot. `ready` turns true once the first complete state is loaded."""

    snapshot: ClusterSnapshot = EMPTY_SNAPSHOT
    ready: bool = False
    generation: int = 0

    def publish(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.generation += 1
        self.ready = True

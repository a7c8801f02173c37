"""The current cluster snapshot, swapped atomically by a source and read by every request."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from policies.snapshot import EMPTY_SNAPSHOT, ClusterSnapshot


@dataclass
class StateHolder:
    """Holds the latest snapshot. `ready` turns true once the first complete state is loaded."""

    snapshot: ClusterSnapshot = EMPTY_SNAPSHOT
    ready: bool = False
    generation: int = 0
    updated_at: float = field(default_factory=time.monotonic)

    def publish(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.generation += 1
        self.updated_at = time.monotonic()
        self.ready = True

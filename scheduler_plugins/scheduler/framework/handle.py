"""What the framework hands a plugin factory: the cluster view, the clock, the API client and the
feature gates.

The client is a seam: the simulator and the snapshot-backed extender use `InMemoryClient`
(cluster/client.py); an API-server client would implement the same two calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from policies.feature_gates import FeatureGates
from scheduler_plugins.clock import Clock, system_clock
from scheduler_plugins.scheduler.framework.features import scheduler_gates
from scheduler_plugins.scheduler.framework.interfaces import ClusterView
from scheduler_plugins.scheduler.framework.waiting import WaitingPods


class ClientError(Exception):
    """An API call failed; `code` is the HTTP status (0 for a closed connection)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClusterClient(Protocol):
    def patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]: ...

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None: ...


@dataclass
class Handle:
    cluster: ClusterView
    client: ClusterClient
    clock: Clock = system_clock
    features: FeatureGates = field(default_factory=scheduler_gates)
    #: pods parked by Permit; plugins allow or reject them from other pods' cycles
    waiting: WaitingPods = field(default_factory=WaitingPods)

"""What the framework hands a plugin factory: the cluster view, the clock, the API client and the
feature gates.

The client is a seam: the simulator and the snapshot-backed extender use `InMemoryClient`
(colocate/cluster/client.py); an API-server client would implement the same two calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from policies.apis.feature_gates import FeatureGates
from scheduler_plugins.clock import Clock, system_clock
from scheduler_plugins.scheduler.framework.features import scheduler_gates
from scheduler_plugins.scheduler.framework.interfaces import ClusterView, PodFilter
from scheduler_plugins.scheduler.framework.nominator import Nominator
from scheduler_plugins.scheduler.framework.status import Status
from scheduler_plugins.scheduler.framework.waiting import WaitingPods
from scheduler_plugins.scheduler.podinfo import PodInfo


class ClientError(Exception):
    """An API call failed; `code` is the HTTP status (0 for a closed connection)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClusterClient(Protocol):
    def patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]: ...

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None: ...

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """Delete a preemption victim (kube-scheduler's PrepareCandidate deletes, it does not evict:
        the PodDisruptionBudgets were weighed when the victims were chosen)."""
        ...

    def evict_pod(self, namespace: str, name: str) -> None:
        """Evict through the Eviction API (policy/v1: budgets are honoured there), as
        ElasticQuota's over-quota monitor does; a refusal is a `ClientError` (429)."""
        ...


@dataclass
class Handle:
    cluster: ClusterView
    client: ClusterClient
    clock: Clock = system_clock
    features: FeatureGates = field(default_factory=scheduler_gates)
    #: pods parked by Permit; plugins allow or reject them from other pods' cycles
    waiting: WaitingPods = field(default_factory=WaitingPods)
    #: pods nominated to a node by a preemption and not bound yet (kube's PodNominator)
    nominator: Nominator = field(default_factory=Nominator)
    #: the profile's Filter for one node with its nominated pods, and its PreFilter extensions
    #: (the Framework): set by the Framework before it builds its plugins, for the PostFilter
    #: plugins that preempt
    filtering: PodFilter | None = None
    #: the profile's PreFilter (`Framework.run_pre_filter`), set likewise
    pre_filter: Callable[..., tuple[PodInfo, Any, Status]] | None = None
    #: the profile's `NominateReservationFilterPlugin`s (Koordinator's
    #: RunNominateReservationFilterPlugins): set by the Framework once its plugins are built, for the
    #: Reservation plugin to ask whether a reservation can serve a pod (its CPUs, its cards) before
    #: it nominates it
    nominate_reservation_filters: list[Any] = field(default_factory=list)

"""What a plugin is given (Koordinator's `Handle`, `pkg/descheduler/framework/types.go`): the
Evictor, the round's cluster snapshot, dry run, the clock, where evictions go (the Eviction API, or
the store offline) and where Events go."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from colocate.cluster.eviction import EvictionResult
from scheduler_plugins.clock import Clock
from scheduler_plugins.descheduler.cluster import Snapshot
from scheduler_plugins.descheduler.framework.evictor import Evictor
from scheduler_plugins.descheduler.framework.report import RoundReport


class EvictionBackend(Protocol):
    """Evicts one pod: `colocate.cluster.eviction.EvictionClient` (policy/v1), or the store offline."""

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult: ...


class MigrationBackend(Protocol):
    """Where the MigrationController reads pods and keeps its PodMigrationJobs and Reservations
    (`migration/backend.py`: the API server, or the store offline)."""

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_jobs(self) -> list[dict[str, Any]]: ...

    def create_job(self, job: dict[str, Any]) -> dict[str, Any]: ...

    def update_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """Write the job's metadata, spec and status; the object as stored."""
        ...

    def get_reservation(self, name: str) -> dict[str, Any] | None: ...

    def create_reservation(self, reservation: dict[str, Any]) -> dict[str, Any]: ...

    def delete_reservation(self, name: str) -> None: ...

    def delete_job(self, name: str) -> None:
        """The scavenger's: a job already gone is not an error."""
        ...

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        """The `Delete` eviction policy: DELETE the pod (no disruption budget is consulted)."""
        ...

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> EvictionResult:
        """The `SoftEviction` policy: add these annotations to the pod."""
        ...


class EventSink(Protocol):
    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None: ...


@dataclass
class Handle:
    evictor: Evictor
    dry_run: bool
    clock: Clock
    evictions: EvictionBackend
    events: EventSink | None = None
    #: where the MigrationController keeps its PodMigrationJobs and Reservations (the API server,
    #: or the store offline); None: it can only evict directly
    migrations: MigrationBackend | None = None
    snapshot: Snapshot = field(default_factory=lambda: Snapshot((), {}, {}))

    @property
    def report(self) -> RoundReport:
        """The running round's report (evict plugins record their skips in it)."""
        return self.evictor.report

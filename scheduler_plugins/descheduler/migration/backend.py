"""Where the MigrationController reads pods and keeps its PodMigrationJobs and Reservations (the
handle's `MigrationBackend`): the API server (`ApiMigrationBackend`, the REST verbs of
`cluster.rest`), or the in-memory store of a directory of manifests (`StoreMigrationBackend`:
offline, where nothing schedules a Reservation, so a `ReservationFirst` job waits and times out;
`EvictDirectly` jobs evict from the store).
"""

from __future__ import annotations

import copy
from typing import Any

from cluster.rest import ObjectClient
from cluster.store import ClusterStore
from policies.constants import POD_MIGRATION_JOB_KIND, RESERVATION_KIND
from policies.objects import name_of


class ApiMigrationBackend:
    def __init__(self, objects: ObjectClient) -> None:
        self.objects = objects

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get("Pod", namespace, name)

    def list_jobs(self) -> list[dict[str, Any]]:
        return self.objects.list(POD_MIGRATION_JOB_KIND)

    def create_job(self, job: dict[str, Any]) -> dict[str, Any]:
        created = self.objects.create(POD_MIGRATION_JOB_KIND, job)
        if job.get("status"):  # the status subresource ignores status on create
            created["status"] = job["status"]
            created = self.objects.replace(POD_MIGRATION_JOB_KIND, created, status=True)
        return created

    def update_job(self, job: dict[str, Any]) -> dict[str, Any]:
        status = job.get("status")
        stored = self.objects.replace(POD_MIGRATION_JOB_KIND, job)
        stored["status"] = status
        return self.objects.replace(POD_MIGRATION_JOB_KIND, stored, status=True)

    def get_reservation(self, name: str) -> dict[str, Any] | None:
        return self.objects.get(RESERVATION_KIND, "", name)

    def create_reservation(self, reservation: dict[str, Any]) -> dict[str, Any]:
        return self.objects.create(RESERVATION_KIND, reservation)

    def delete_reservation(self, name: str) -> None:
        self.objects.delete(RESERVATION_KIND, "", name)


class StoreMigrationBackend:
    """The store of `descheduler run --cluster DIR`: jobs and Reservations live in memory only."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        pod = self.store.get("Pod", (namespace, name))
        return copy.deepcopy(dict(pod)) if pod is not None else None

    def list_jobs(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(dict(j)) for j in self.store.objects(POD_MIGRATION_JOB_KIND)]

    def create_job(self, job: dict[str, Any]) -> dict[str, Any]:
        self.store.put(POD_MIGRATION_JOB_KIND, copy.deepcopy(job), "migration")
        return job

    def update_job(self, job: dict[str, Any]) -> dict[str, Any]:
        self.store.put(POD_MIGRATION_JOB_KIND, copy.deepcopy(job), "migration")
        return job

    def get_reservation(self, name: str) -> dict[str, Any] | None:
        obj = self.store.get(RESERVATION_KIND, ("", name))
        return copy.deepcopy(dict(obj)) if obj is not None else None

    def create_reservation(self, reservation: dict[str, Any]) -> dict[str, Any]:
        self.store.put(RESERVATION_KIND, copy.deepcopy(reservation), "migration")
        return reservation

    def delete_reservation(self, name: str) -> None:
        obj = self.store.get(RESERVATION_KIND, ("", name))
        if obj is not None:
            self.store.delete(RESERVATION_KIND, obj)


def job_name(job: dict[str, Any]) -> str:
    return name_of(job)

"""Where the MigrationController reads pods and keeps its PodMigrationJobs and Reservations (the
handle's `MigrationBackend`): the API server (`ApiMigrationBackend`, the REST verbs of
`colocate.cluster.rest`), or the in-memory store of a directory of manifests (`StoreMigrationBackend`:
offline, where nothing schedules a Reservation, so a `ReservationFirst` job waits and times out;
`EvictDirectly` jobs evict from the store). Both also write pods for the `Delete` and
`SoftEviction` eviction policies (`evictpolicy.py`) and delete old jobs (the scavenger).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from colocate.cluster.eviction import EvictionResult, Outcome
from colocate.cluster.rest import ApiError, ObjectClient
from colocate.cluster.store import ClusterStore
from policies.apis.constants import POD_MIGRATION_JOB_KIND, RESERVATION_KIND
from policies.apis.objects import name_of


def omit_empty(status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The status as Koordinator's Go types serialize it: `reason`, `message` and the like are
    `omitempty`, so an empty string is left out. kube-apiserver 1.20 refuses an empty
    `status.message` of a PodMigrationJob (`must be of type string: "null"`), which the stand-in
    accepts (docs/development.md, what the stand-in does differently)."""
    if status is None:
        return None
    kept = _without_empty(status)
    conditions = kept.get("conditions")
    if isinstance(conditions, list):
        kept["conditions"] = [_without_empty(c) if isinstance(c, Mapping) else c for c in conditions]
    return kept


def _without_empty(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value != ""}


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
            created["status"] = omit_empty(job["status"])
            created = self.objects.replace(POD_MIGRATION_JOB_KIND, created, status=True)
        return created

    def update_job(self, job: dict[str, Any]) -> dict[str, Any]:
        status = omit_empty(job.get("status"))
        stored = self.objects.replace(POD_MIGRATION_JOB_KIND, job)
        stored["status"] = status
        return self.objects.replace(POD_MIGRATION_JOB_KIND, stored, status=True)

    def get_reservation(self, name: str) -> dict[str, Any] | None:
        return self.objects.get(RESERVATION_KIND, "", name)

    def create_reservation(self, reservation: dict[str, Any]) -> dict[str, Any]:
        return self.objects.create(RESERVATION_KIND, reservation)

    def delete_reservation(self, name: str) -> None:
        self.objects.delete(RESERVATION_KIND, "", name)

    def delete_job(self, name: str) -> None:
        self.objects.delete(POD_MIGRATION_JOB_KIND, "", name)

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        options = {"gracePeriodSeconds": grace_period_seconds} if grace_period_seconds is not None else None
        try:
            if self.objects.get("Pod", namespace, name) is None:
                return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
            self.objects.delete("Pod", namespace, name, options)
        except ApiError as exc:
            return EvictionResult(Outcome.FAILED, str(exc), exc.code)
        return EvictionResult(Outcome.EVICTED, "", 200)

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> EvictionResult:
        try:
            self.objects.patch("Pod", namespace, name, {"metadata": {"annotations": dict(annotations)}})
        except ApiError as exc:
            if exc.code == 404:
                return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
            return EvictionResult(Outcome.FAILED, str(exc), exc.code)
        return EvictionResult(Outcome.EVICTED, "", 200)


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

    def delete_job(self, name: str) -> None:
        obj = self.store.get(POD_MIGRATION_JOB_KIND, ("", name))
        if obj is not None:
            self.store.delete(POD_MIGRATION_JOB_KIND, obj)

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
        self.store.delete("Pod", pod)
        return EvictionResult(Outcome.EVICTED, "", 200)

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> EvictionResult:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            return EvictionResult(Outcome.GONE, f'pods "{name}" not found', 404)
        changed = copy.deepcopy(dict(pod))
        changed.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
        self.store.put("Pod", changed, "migration")
        return EvictionResult(Outcome.EVICTED, "", 200)


def job_name(job: dict[str, Any]) -> str:
    return name_of(job)

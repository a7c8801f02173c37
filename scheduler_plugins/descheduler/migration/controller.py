"""The MigrationController's reconciler: one PodMigrationJob at a time, one step per call
(`pkg/descheduler/controllers/migration/controller.go` Reconciler.doMigrate; tests
`TestMigrate*`, `TestAbortJobIfTimeout`, `TestEvictPodDirectly`, `TestWaitForPodBindReservation`).

`ReservationFirst`: create a Reservation that holds room for the pod's replacement (its owners are
the pod's controller, never on the pod's node), wait until the scheduler schedules it, only then
evict the pod through the Eviction API, wait until the replacement takes the Reservation and is
Ready: Succeeded. A Reservation the scheduler cannot place leaves the job waiting with
`ReservationScheduled=False/Unschedulable` and the scheduler's message; when the job's TTL runs
out the Reservation is deleted and the job fails (`Timeout`), and nothing was evicted. A
Reservation placed on the pod's own node, one bound by another pod, or a pod gone before its
eviction fail the job too. `EvictDirectly`: evict, Succeeded.

New jobs go through arbitration first (`limits.py`): a job whose pod may never move fails
(`ForbiddenMigratePod`: the MigrationController's non-retryable filter, the same rules its Filter
applies to the pods a plugin would evict, so a job written by hand gets round none of them); one
over a limit waits for a later arbitration.

The pod leaves its node by the configured `evictionPolicy` (`evictpolicy.py`). Up to
`maxConcurrentReconciles` jobs are reconciled at once (controller-runtime's workers; one job is
never reconciled by two at once); the object limiters are shared under a lock, as Koordinator's
`limiterLock`.
"""

from __future__ import annotations

import copy
import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from colocate.cluster.eviction import EvictionResult, Outcome
from colocate.cluster.rest import ApiError
from policies.apis.constants import ANNOTATION_EVICT_REASON, ANNOTATION_EVICT_TRIGGER, ANNOTATION_PASSED_ARBITRATION
from policies.apis.durations import parse_duration
from policies.apis.objects import annotations_of, metadata_of, name_of, node_name_of, spec_of
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.framework.handle import EventSink, EvictionBackend, MigrationBackend
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration import reservation_status as rs
from scheduler_plugins.descheduler.migration.evictpolicy import EVICTION, PolicyEvictor
from scheduler_plugins.descheduler.migration.limits import Limits, arbitration_order

log = logging.getLogger("colocate.descheduler.migration")

#: what a job's `reservationOptions.preemptionOptions` gets: Koordinator's controller never
#: preempts for a migration's Reservation either (`reservation/interpreter.go` `Preemption()` is nil,
#: `Reservation.NeedPreemption()` false): an unschedulable Reservation fails the job
REASON_PREEMPTION_NOT_SUPPORTED: Final = "PreemptionNotSupported"
PREEMPTION_NOT_SUPPORTED: Final = (
    "preemptionOptions is not acted on: a migration's Reservation never preempts other pods "
    "(as in Koordinator); if the scheduler cannot place it, the job fails or times out"
)
#: why a pod may never be migrated, or None (given the pods by key, for its workload's replicas)
Forbidden = Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Any]]], str | None]
#: Koordinator's default `maxConcurrentReconciles`
DEFAULT_WORKERS: Final = 1


class Reconciler:
    def __init__(
        self,
        backend: MigrationBackend,
        evictions: EvictionBackend,
        limits: Limits,
        clock: Callable[[], float],
        *,
        default_mode: str,
        default_grace: int | None = None,
        events: EventSink | None = None,
        pod_sorter: Callable[[list[Mapping[str, Any]]], list[Mapping[str, Any]]] = list,
        evictor: PolicyEvictor | None = None,
        workers: int = DEFAULT_WORKERS,
        forbidden: Forbidden | None = None,
    ) -> None:
        self.backend, self.evictions, self.limits, self.clock = backend, evictions, limits, clock
        #: why a job's pod may never be migrated (the MigrationController's non-retryable filter;
        #: without one, the workload's expected replicas only)
        self.forbidden: Forbidden = forbidden or limits.non_retryable
        self.evictor = evictor or PolicyEvictor(EVICTION, evictions, None, clock)
        self.workers = max(1, workers)
        self._limits_lock = threading.Lock()
        self.default_mode, self.default_grace, self.events, self.pod_sorter = (
            default_mode,
            default_grace,
            events,
            pod_sorter,
        )
        self._order = itertools.count(1)
        #: each job as its current step read it (what `_write` compares with), by job name
        self._before: dict[str, dict[str, Any]] = {}

    # --- arbitration ----------------------------------------------------------------------------
    def arbitrate(self, jobs: list[dict[str, Any]], pods: Mapping[str, Mapping[str, Any]]) -> None:
        """Pass or fail the pending jobs not yet arbitrated, in the arbitrator's order."""
        waiting = [
            j
            for j in jobs
            if pmj.phase_of(j) == pmj.PENDING and annotations_of(j).get(ANNOTATION_PASSED_ARBITRATION) != "true"
        ]
        for job in arbitration_order(waiting, pods, self.pod_sorter):
            job = dict(job)
            pod = pods.get(pmj.pod_key_of(job))
            if pod is None:
                continue  # the reconciler fails it as MissingPod
            why = self.forbidden(pod, pods)
            if why is not None:
                pmj.finish(
                    job,
                    pmj.FAILED,
                    pmj.REASON_FORBIDDEN_MIGRATE_POD,
                    f'Pod "{pmj.pod_key_of(job)}" is forbidden to migrate because it does not meet the '
                    f"requirements: {why}",
                )
                self._save(job, jobs)
                continue
            why = self.limits.retryable(pod, pods, jobs)
            if why is not None:
                log.debug("job %s waits for arbitration: %s", name_of(job), why)
                continue
            job.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION_PASSED_ARBITRATION] = "true"
            self._save(job, jobs)

    def _save(self, job: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
        stored = self.backend.update_job(job)
        for i, other in enumerate(jobs):
            if name_of(other) == name_of(job):
                jobs[i] = stored
        return stored

    # --- reconcile ------------------------------------------------------------------------------
    def reconcile_all(self, pods: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One pass: arbitrate the new jobs, then one step of every active job. The jobs after it."""
        jobs = self.backend.list_jobs()
        self.arbitrate(jobs, pods)
        ready = [
            i
            for i, job in enumerate(jobs)
            if pmj.is_active(job)
            and (pmj.phase_of(job) == pmj.RUNNING or annotations_of(job).get(ANNOTATION_PASSED_ARBITRATION) == "true")
        ]
        if self.workers == 1 or len(ready) <= 1:
            for i in ready:
                jobs[i] = self._reconcile_logged(jobs[i], pods)
            return jobs
        with ThreadPoolExecutor(max_workers=min(self.workers, len(ready)), thread_name_prefix="pmj") as pool:
            done = list(pool.map(lambda i: self._reconcile_logged(jobs[i], pods), ready))
        for i, job in zip(ready, done, strict=True):
            jobs[i] = job
        return jobs

    def _reconcile_logged(self, job: dict[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        try:
            return self.reconcile(job, pods)
        except ApiError as exc:  # retried on the next pass, as a requeue
            log.warning("reconciling PodMigrationJob %s: %s", name_of(job), exc)
            return job
        finally:
            self._before.pop(name_of(job), None)

    def reconcile(self, job: dict[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """One step of `doMigrate` for an active job; returns the job as stored. The job is
        written only when the step changed it (a job waiting on the scheduler costs no write)."""
        self._before[name_of(job)] = copy.deepcopy(job)
        if self._timed_out(job):
            self._delete_reservation(job)
            pmj.finish(job, pmj.FAILED, pmj.REASON_TIMEOUT, "Abort job caused by timeout")
            self._event(job, "Warning", pmj.REASON_TIMEOUT, "Abort job caused by timeout")
            return self._write(job)
        ref = pmj.pod_ref(job)
        namespace, name = str(ref.get("namespace") or ""), str(ref.get("name") or "")
        if pmj.phase_of(job) == pmj.PENDING:
            if not namespace or not name:
                pmj.finish(job, pmj.FAILED, "InvalidPodRef", "Abort job caused by invalid PodRef")
                return self._write(job)
            pod = self.backend.get_pod(namespace, name)
            if pod is None:
                return self._missing_pod(job)
            job["spec"]["podRef"]["uid"] = str(metadata_of(pod).get("uid") or ref.get("uid") or "")
            job.setdefault("status", {})["phase"] = pmj.RUNNING
            # Koordinator returns here and its own status update requeues the job at once: go on
            job = self._write(job)
        if not pmj.condition_true(job, pmj.COND_EVICTION):
            pod = self.backend.get_pod(namespace, name)
            with self._limits_lock:
                refused = pod is not None and self.limits.limiter_refusal(pod, pods)
            if refused:
                return job  # requeue: the object limiter has no token now
        if pmj.mode_of(job, self.default_mode) == pmj.MODE_EVICT_DIRECTLY:
            done, job = self._evict(job, pods)
            if done:
                pmj.finish(job, pmj.SUCCEEDED, "", f'Pod "{namespace}/{name}" has been evicted')
                job = self._write(job)
            return job
        return self._reservation_first(job, pods)

    def _reservation_first(self, job: dict[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        name = pmj.reservation_name(job)
        if not name:
            job = self._create_reservation(job)
            name = pmj.reservation_name(job)
            if not name or not pmj.is_active(job):
                return job
        pmj.set_condition(job, pmj.COND_RESERVATION_CREATED, "True", self.clock())
        reservation = self.backend.get_reservation(name)
        if reservation is None:
            pmj.finish(
                job, pmj.FAILED, pmj.REASON_MISSING_RESERVATION, f'Abort job caused by missing Reservation "{name}"'
            )
            return self._write(job)
        unschedulable = rs.condition(reservation, "Scheduled", "Unschedulable")
        scheduled_cond = pmj.condition(job, pmj.COND_RESERVATION_SCHEDULED)
        if unschedulable is not None and (scheduled_cond is None or scheduled_cond.get("status") == "False"):
            message = str(unschedulable.get("message") or "")
            if pmj.set_condition(
                job, pmj.COND_RESERVATION_SCHEDULED, "False", self.clock(), pmj.REASON_UNSCHEDULABLE, message
            ):
                self._event(job, "Warning", pmj.REASON_UNSCHEDULABLE, message)
        phase = rs.phase(reservation)
        if phase in ("", "Pending"):
            return self._write(job)  # requeue: waiting for the scheduler
        if phase == "Failed" and rs.condition(reservation, "Ready", "Expired") is not None:
            pmj.finish(job, pmj.FAILED, pmj.REASON_RESERVATION_EXPIRED, "Reservation expired")
            return self._write(job)
        scheduled = rs.node(reservation) and rs.condition(reservation, "Scheduled", "Scheduled") is not None
        if not scheduled and phase not in ("Available", "Succeeded"):
            message = str((unschedulable or {}).get("message") or "")
            pmj.finish(job, pmj.FAILED, pmj.REASON_UNSCHEDULABLE, message)
            return self._write(job)
        node = rs.node(reservation)
        ref = pmj.pod_ref(job)
        if not job["status"].get("nodeName"):
            pod = self.backend.get_pod(str(ref.get("namespace")), str(ref.get("name")))
            if pod is not None and node and spec_of(pod).get("nodeName") == node:
                pmj.finish(
                    job,
                    pmj.FAILED,
                    pmj.REASON_FORBIDDEN_MIGRATE_POD,
                    f'Scheduler assignes the Reservation "{name}" on the same node as the Pod',
                )
                self._delete_reservation(job)
                return self._write(job)
            job["status"]["nodeName"] = node
            pmj.set_condition(job, pmj.COND_RESERVATION_SCHEDULED, "True", self.clock())
            self._event(
                job, "Normal", pmj.COND_RESERVATION_SCHEDULED, f'Assigned Reservation "{name}" to node "{node}"'
            )
        done, job = self._evict(job, pods, reservation)
        if not done or pmj.phase_of(job) != pmj.RUNNING:
            return job
        bound = rs.bound_pod(reservation)
        if bound is None:
            pmj.set_condition(
                job, pmj.COND_POD_BOUND_RESERVATION, "False", self.clock(), pmj.REASON_WAIT_FOR_POD_BIND_RESERVATION
            )
            return self._write(job)
        bound_key = f"{bound.get('namespace')}/{bound.get('name')}"
        job["status"]["podRef"] = dict(bound)
        pmj.set_condition(job, pmj.COND_RESERVATION_BOUND, "True", self.clock())
        replacement = self.backend.get_pod(str(bound.get("namespace")), str(bound.get("name")))
        if replacement is not None and not rs.pod_ready(replacement):
            pmj.set_condition(job, pmj.COND_BOUND_POD_READY, "False", self.clock(), "WaitForBoundPodReady")
            return self._write(job)
        pmj.set_condition(job, pmj.COND_BOUND_POD_READY, "True", self.clock())
        message = f'Bind Pod "{bound_key}" in Reservation "{name}"'
        pmj.set_condition(job, pmj.COND_POD_BOUND_RESERVATION, "True", self.clock(), "", message)
        pmj.finish(job, pmj.SUCCEEDED, "", message)
        self._event(job, "Normal", "Complete", message)
        return self._write(job)

    def _create_reservation(self, job: dict[str, Any]) -> dict[str, Any]:
        ref = pmj.pod_ref(job)
        pod = self.backend.get_pod(str(ref.get("namespace")), str(ref.get("name")))
        if pod is None:
            return self._missing_pod(job)
        reservation = pmj.reservation_for(job, pod, int(self.clock() * 1000) + next(self._order))
        try:
            created = self.backend.create_reservation(reservation)
        except ApiError as exc:
            pmj.set_condition(
                job,
                pmj.COND_RESERVATION_CREATED,
                "False",
                self.clock(),
                pmj.REASON_FAILED_CREATE_RESERVATION,
                f"Failed to create Reservation caused by {exc}",
            )
            return self._write(job)
        options = dict(job["spec"].get("reservationOptions") or {})
        if "preemptionOptions" in options:
            self._event(job, "Warning", REASON_PREEMPTION_NOT_SUPPORTED, PREEMPTION_NOT_SUPPORTED)
        job["spec"]["reservationOptions"] = {
            **options,
            "reservationRef": {
                "apiVersion": pmj.API_VERSION,
                "kind": "Reservation",
                "name": name_of(created),
                "uid": str(metadata_of(created).get("uid") or ""),
            },
        }
        pmj.set_condition(job, pmj.COND_RESERVATION_CREATED, "True", self.clock())
        self._event(
            job, "Normal", pmj.COND_RESERVATION_CREATED, f'Successfully create Reservation "{name_of(created)}"'
        )
        return self._write(job)

    def _evict(
        self, job: dict[str, Any], pods: Mapping[str, Mapping[str, Any]], reservation: Mapping[str, Any] | None = None
    ) -> tuple[bool, dict[str, Any]]:
        """`evictPod`: (evicted and gone, the job)."""
        if pmj.condition_true(job, pmj.COND_EVICTION):
            return True, job
        ref = pmj.pod_ref(job)
        namespace, name = str(ref.get("namespace")), str(ref.get("name"))
        cond = pmj.condition(job, pmj.COND_EVICTION)
        pod = self.backend.get_pod(namespace, name)
        replaced = pod is not None and ref.get("uid") and metadata_of(pod).get("uid") != ref.get("uid")
        if pod is None or (cond is not None and replaced):
            if cond is None:
                return False, self._missing_pod(job)
            pmj.set_condition(job, pmj.COND_EVICTION, "True", self.clock(), pmj.REASON_EVICT_COMPLETE)
            return True, self._write(job)
        if cond is not None and cond.get("reason") == pmj.REASON_EVICTING:
            return False, job  # requeue: the pod is terminating
        if reservation is not None and rs.phase(reservation) == "Succeeded":
            bound = rs.bound_pod(reservation) or {}
            if bound.get("uid") != metadata_of(pod).get("uid"):
                pmj.finish(
                    job, pmj.FAILED, pmj.REASON_FORBIDDEN_MIGRATE_POD, "Reservation is already bound by another Pod"
                )
                return False, self._write(job)
        grace = (spec_of(job).get("deleteOptions") or {}).get("gracePeriodSeconds", self.default_grace)
        annotations = annotations_of(job)
        result = self.evictor.evict(
            pod,
            grace,
            trigger=str(annotations.get(ANNOTATION_EVICT_TRIGGER) or ""),
            reason=str(annotations.get(ANNOTATION_EVICT_REASON) or ""),
            job=job,
        )
        if result.outcome is Outcome.GONE:
            pmj.set_condition(job, pmj.COND_EVICTION, "True", self.clock(), pmj.REASON_EVICT_COMPLETE)
            return True, self._write(job)
        if result.outcome is not Outcome.EVICTED:
            return False, self._eviction_failed(job, f"{namespace}/{name}", result)
        with self._limits_lock:
            self.limits.track_eviction(pod, pods)
        reason = annotations.get(ANNOTATION_EVICT_REASON, "")
        node = node_name_of(pod)
        message = f'Pod "{namespace}/{name}" evicted from node "{node}" by the reason "{reason}"'
        pmj.set_condition(job, pmj.COND_EVICTION, "False", self.clock(), pmj.REASON_EVICTING, message)
        self._event(job, "Normal", pmj.REASON_EVICTING, message)
        return False, self._write(job)

    def _eviction_failed(self, job: dict[str, Any], pod: str, result: EvictionResult) -> dict[str, Any]:
        """The job says why its eviction did not happen (condition Eviction=False, FailedEvict), never
        that it did. A request the server refuses as such (400: a version it does not serve; 403)
        cannot pass later: the job fails. A budget, a timeout or a 5xx may: it is asked again."""
        message = f'Failed evict Pod "{pod}" caused by {result.message or result.outcome.value}'
        self._event(job, "Warning", pmj.REASON_EVICTING, message)
        pmj.set_condition(job, pmj.COND_EVICTION, "False", self.clock(), pmj.REASON_FAILED_EVICT, message)
        if result.permanent:
            self._delete_reservation(job)
            pmj.finish(job, pmj.FAILED, pmj.REASON_FAILED_EVICT, message)
        return self._write(job)

    def _write(self, job: dict[str, Any]) -> dict[str, Any]:
        if job == self._before.get(name_of(job)):
            return job
        stored = self.backend.update_job(job)
        self._before[name_of(job)] = copy.deepcopy(stored)
        return stored

    def _missing_pod(self, job: dict[str, Any]) -> dict[str, Any]:
        message = f'Abort job caused by missing Pod "{pmj.pod_key_of(job)}"'
        pmj.finish(job, pmj.FAILED, pmj.REASON_MISSING_POD, message)
        self._event(job, "Warning", pmj.REASON_MISSING_POD, message)
        return self._write(job)

    def _timed_out(self, job: Mapping[str, Any]) -> bool:
        ttl = spec_of(job).get("ttl")
        created = parse_time(metadata_of(job).get("creationTimestamp"))
        if not ttl or created is None:
            return False
        seconds = parse_duration(str(ttl))
        return seconds > 0 and self.clock() - created >= seconds

    def _delete_reservation(self, job: Mapping[str, Any]) -> None:
        name = pmj.reservation_name(job)
        if name:
            self.backend.delete_reservation(name)

    def _event(self, job: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self.events is not None:
            self.events.record(job, type_, reason, message)

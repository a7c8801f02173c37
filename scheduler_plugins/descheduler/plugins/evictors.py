"""The Filter and Evict plugins: `MigrationController` (Koordinator's default for both points) and
`DefaultEvictor` (Kubernetes' name). Both filter with the DefaultEvictor semantics
(`plugins.evictable`) and evict through the handle's backend — `policy/v1` Eviction against the
API server — so PodDisruptionBudgets are honoured there. A refused eviction (429: a budget allows
no disruption now) is recorded as a skip with the server's reason; an evicted pod gets an Event.

Both take the pod off its node by the MigrationController's `evictionPolicy` (`Eviction`,
`Delete`, `SoftEviction`: `migration/evictpolicy.py`; DefaultEvictor always evicts).

MigrationController migrates when its args set `defaultJobMode` (`ReservationFirst` or
`EvictDirectly`): an eviction a Balance plugin asks for becomes a PodMigrationJob
(`pkg/descheduler/controllers/migration/evict.go`), which its reconciler (`migration/controller.py`)
advances after every round: reserve room for the replacement, then evict. Without `defaultJobMode`
it evicts directly, as it did before PodMigrationJobs existed here (a configuration that never
asked for jobs keeps its behaviour). Under dry run the jobs it would create are reported, nothing
is written; its own `dryRun` arg does the same for this plugin only (Koordinator's `Evict` logs and
returns true). With `ReservationFirst`, only pods whose `schedulerName` is in `schedulerNames` are
migrated — the scheduler that places the Reservation must be the pod's (`arbitrator/filter.go`
`reservationFilter`). Its args are parsed in `evictor_args.py`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from colocate.cluster.eviction import Outcome
from policies.apis.constants import ANNOTATION_DESCHEDULER_EVICT, ANNOTATION_EVICTION_COST
from policies.apis.objects import annotations_of, name_of, namespace_of, node_name_of, spec_of, status_of
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.framework.handle import Handle
from scheduler_plugins.descheduler.framework.interfaces import EvictOptions, Object
from scheduler_plugins.descheduler.framework.report import EvictionEntry, MigrationEntry
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.controller import Reconciler
from scheduler_plugins.descheduler.migration.evictpolicy import TOO_MANY_EVICTIONS, PolicyEvictor
from scheduler_plugins.descheduler.migration.limits import (
    JobCounts,
    Limits,
    PodIndex,
)
from scheduler_plugins.descheduler.migration.scavenger import Scavenger
from scheduler_plugins.descheduler.plugins.evictable import (
    MAX_EVICTION_COST,
    EvictableArgs,
    cost_annotation,
    why_not_evictable,
)
from scheduler_plugins.descheduler.plugins.evictor_args import (
    DEFAULT_EVICTOR,
    DEFAULT_SCHEDULER,
    MIGRATION_CONTROLLER,
    MigrationControllerArgs,
)
from scheduler_plugins.descheduler.plugins.lownodeload.sorting import sort_pods

log = logging.getLogger("colocate.descheduler")

EVENT_REASON: Final = "Descheduled"


def evict_through_api(
    handle: Handle, pod: Object, options: EvictOptions, grace: int | None, evictor: PolicyEvictor | None = None
) -> bool:
    """Evict through the handle's backend (or by the evictor's policy); a refusal is a skip
    recorded with its reason."""
    namespace, name = namespace_of(pod) or "default", name_of(pod)
    node = node_name_of(pod)
    if evictor is None:
        result = handle.evictions.evict(namespace, name, options.grace_period_seconds or grace)
    else:
        result = evictor.evict(
            pod, options.grace_period_seconds or grace, trigger=options.plugin_name, reason=options.reason
        )
    if result.outcome is Outcome.EVICTED:
        if handle.events is not None:
            handle.events.record(
                pod,
                "Normal",
                EVENT_REASON,
                f"pod evicted from node {node} by koord-descheduler ({options.plugin_name}): {options.reason}",
            )
        return True
    reason = {
        Outcome.BLOCKED: "blocked by a PodDisruptionBudget",
        Outcome.GONE: "pod is gone",
        Outcome.FAILED: "eviction failed",
    }[result.outcome]
    if result.message.startswith(TOO_MANY_EVICTIONS):
        reason = "rate-limited"
    detail = f"{reason}: {result.message}" if result.message else reason
    (log.info if result.outcome is not Outcome.FAILED else log.warning)("not evicted %s: %s", pod_key(pod), detail)
    handle.report.skipped.append(EvictionEntry(pod_key(pod), node, options.plugin_name, detail))
    return False


class MigrationController:
    name = MIGRATION_CONTROLLER

    def __init__(
        self, args: MigrationControllerArgs, handle: Handle, new_name: Callable[[], str] = lambda: str(uuid.uuid4())
    ) -> None:
        self.args, self.handle, self.new_name = args, handle, new_name
        #: who created the jobs this process reconciles (Koordinator's reconcilerUID)
        self.uid = new_name()
        self.limits = Limits(args.limits, handle.clock)
        self.reconciler: Reconciler | None = None
        self.scavenger: Scavenger | None = None
        self.pod_evictor = PolicyEvictor(
            args.eviction_policy, handle.evictions, handle.migrations, handle.clock, args.evict_rate
        )
        self._round_of: object = None
        self._round_pods = PodIndex()
        self._round_jobs: list[dict[str, Any]] = []
        self._round_counts = JobCounts(self._round_pods)
        if handle.migrations is not None:
            self.reconciler = Reconciler(
                handle.migrations,
                handle.evictions,
                self.limits,
                handle.clock,
                default_mode=args.default_job_mode,
                default_grace=args.grace_period_seconds,
                events=handle.events,
                pod_sorter=lambda pods: sort_pods(pods, {}, {}, {}),
                evictor=self.pod_evictor,
                workers=args.workers,
                forbidden=self.forbidden,
            )
            self.scavenger = Scavenger(handle.migrations, handle.clock)

    @property
    def scavenged(self) -> int:
        """PodMigrationJobs its scavenger deleted since the start (the metric's source)."""
        return self.scavenger.deleted if self.scavenger is not None else 0

    def filter(self, pod: Object) -> bool:
        """Filter, before a plugin asks for an eviction: the reservation filter, then the pod's own
        non-retryable rules (the workload's expected replicas are checked when the job is made, so
        that the refusal is reported)."""
        if self.args.migrate and self.args.default_job_mode == pmj.MODE_RESERVATION_FIRST:
            scheduler = str(spec_of(pod).get("schedulerName") or DEFAULT_SCHEDULER)
            if scheduler not in self.args.scheduler_names:
                log.debug(
                    "%s cannot be migrated by ReservationFirst: its scheduler %s is not one of schedulerNames %s",
                    pod_key(pod),
                    scheduler,
                    list(self.args.scheduler_names),
                )
                return False
        why = self.forbidden(pod, None)
        if why is not None:
            log.debug("%s is not migrated: %s", pod_key(pod), why)
        return why is None

    def forbidden(self, pod: Object, pods: Mapping[str, Object] | None) -> str | None:
        """Koordinator's non-retryable filter (`arbitrator/filter.go` `nonRetryablePodFilter`): why
        the pod may never be migrated, or None. The one place its rules are: Filter asks it of every
        pod a plugin would evict, and arbitration of every new job, a job written by hand
        included (one it refuses fails `ForbiddenMigratePod`). Without `pods`, the rules that read
        the pod alone (Filter's: the workload's expected replicas are checked when the job is made,
        so that the refusal is reported)."""
        if ANNOTATION_DESCHEDULER_EVICT in annotations_of(pod):
            return None  # HaveEvictAnnotation: the pod is declared evictable
        namespace = namespace_of(pod) or "default"
        if self.args.namespaces_include and namespace not in self.args.namespaces_include:
            return f"namespace {namespace} is not one of the included namespaces"
        if namespace in self.args.namespaces_exclude:
            return f"namespace {namespace} is excluded"
        if cost_annotation(pod, ANNOTATION_EVICTION_COST) == MAX_EVICTION_COST:
            return "its eviction cost is MaxInt32"
        why = why_not_evictable(pod, self.args.evictable)
        if why is None and pods is not None:
            why = self.limits.non_retryable(pod, pods)
        return why

    def pre_eviction_filter(self, pod: Object) -> bool:
        return True

    def evict(self, pod: Object, options: EvictOptions) -> bool:
        if self.args.dry_run:
            log.info(
                "%s would evict %s (MigrationController dryRun): %s", options.plugin_name, pod_key(pod), options.reason
            )
            return self.plan(pod, options)
        if not self.args.migrate:
            return evict_through_api(self.handle, pod, options, self.args.grace_period_seconds, self.pod_evictor)
        job = self._job_for(pod, options)
        if job is None:
            return False
        backend = self.handle.migrations
        if backend is None:
            raise RuntimeError("MigrationController migrates but the descheduler has no PodMigrationJob backend")
        backend.create_job(job)
        self._record(job, pmj.PENDING)
        self._count(job)
        return True

    def plan(self, pod: Object, options: EvictOptions) -> bool:
        """Dry run: the job an eviction would create, reported and not written."""
        if not self.args.migrate:
            return True
        job = self._job_for(pod, options)
        if job is None:
            return False
        self._record(job, pmj.PENDING)
        self._count(job)
        return True

    def _round(self) -> tuple[PodIndex, JobCounts, list[dict[str, Any]]]:
        """This round's pods (indexed by workload) and the jobs the limits count: those stored,
        read once a round, plus those created (or, under dry run, planned) during it. A dry run
        reads the stored jobs too: its limits refuse what the real round's would (Koordinator's
        dry run still passes each pod through the arbitrator's Filter)."""
        if self._round_of is not self.handle.report:
            snapshot = self.handle.snapshot
            pods = PodIndex({pod_key(p): p for ps in snapshot.pods_by_node.values() for p in ps})
            backend = self.handle.migrations
            stored = backend.list_jobs() if backend is not None else []
            self._round_of, self._round_pods, self._round_jobs = self.handle.report, pods, stored
            self._round_counts = JobCounts.of(stored, pods)
        return self._round_pods, self._round_counts, self._round_jobs

    def _count(self, job: dict[str, Any]) -> None:
        """A job created (or planned) this round counts at once, as if it had passed arbitration."""
        counted = dict(job, status={"phase": pmj.RUNNING})
        _, counts, jobs = self._round()
        jobs.append(counted)
        counts.add(counted)

    def _job_for(self, pod: Object, options: EvictOptions) -> dict[str, Any] | None:
        """The job for the pod, or None (recorded as a skip) when a job exists for it already or a
        limit refuses it (`Evict`: Filter, then the object limiter)."""
        pods, counts, jobs = self._round()
        key = pod_key(pod)
        node = node_name_of(pod)
        if key in counts.active:
            why: str | None = "a PodMigrationJob for the pod is already running"
        else:
            why = self.forbidden(pod, pods) or self.limits.retryable(pod, pods, counts)
        if why is not None:
            self.handle.report.skipped.append(EvictionEntry(key, node, options.plugin_name, f"not migrated: {why}"))
            return None
        return pmj.new_job(
            self.new_name(),
            pod,
            mode=self.args.default_job_mode,
            ttl_seconds=self.args.default_job_ttl,
            reason=options.reason,
            trigger=options.plugin_name,
            created_by=self.uid,
            now=self.handle.clock(),
            grace_period_seconds=options.grace_period_seconds or self.args.grace_period_seconds,
        )

    def _record(self, job: Mapping[str, Any], phase: str) -> None:
        mode = pmj.mode_of(job, self.args.default_job_mode)
        reservation = pmj.planned_reservation(job, self.args.default_job_mode)
        self.handle.report.migrations.append(
            MigrationEntry(pmj.pod_key_of(job), mode, reservation, phase, "" if self.handle.dry_run else name_of(job))
        )

    def reconcile(self) -> list[MigrationEntry]:
        """Advance every job once; each job active before or after this pass, as report entries."""
        backend = self.handle.migrations
        if self.reconciler is None or backend is None or self.args.paused or not self.args.migrate:
            return []
        if self.scavenger is not None:
            self.scavenger.run()
        was_active = {name_of(j) for j in backend.list_jobs() if pmj.is_active(j)}
        jobs = self.reconciler.reconcile_all(self._round()[0])
        return [
            MigrationEntry(
                pmj.pod_key_of(job),
                pmj.mode_of(job, self.args.default_job_mode),
                pmj.planned_reservation(job, self.args.default_job_mode),
                pmj.phase_of(job),
                name_of(job),
                str(status_of(job).get("reason") or ""),
                str(status_of(job).get("message") or ""),
            )
            for job in sorted(jobs, key=name_of)
            if pmj.is_active(job) or name_of(job) in was_active
        ]


class DefaultEvictor:
    name = DEFAULT_EVICTOR

    def __init__(self, args: EvictableArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    def filter(self, pod: Object) -> bool:
        return why_not_evictable(pod, self.args) is None

    def pre_eviction_filter(self, pod: Object) -> bool:
        return True

    def evict(self, pod: Object, options: EvictOptions) -> bool:
        return evict_through_api(self.handle, pod, options, None)

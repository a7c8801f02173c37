"""The MigrationController's scavenger (`pkg/descheduler/controllers/migration/controller.go`
`scavenger`/`doScavenge`): once a minute, every PodMigrationJob older than its age limit is deleted,
with its Reservation — so finished jobs do not pile up in the API server.

The age limit is Koordinator's, not an arg: the job's TTL plus 5 minutes when it has one, else 30
minutes, counted from the job's creation. Koordinator scavenges every job past that age whatever
its phase; a job with a TTL has failed (`Timeout`) long before. A Reservation that cannot be
deleted (other than already gone) stops the pass, as Koordinator's `break` does; it is tried again
next minute.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from colocate.cluster.rest import ApiError
from policies.apis.durations import parse_duration
from policies.apis.objects import metadata_of, name_of, spec_of
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.framework.handle import MigrationBackend
from scheduler_plugins.descheduler.migration import job as pmj

log = logging.getLogger("colocate.descheduler.migration")

#: how often the scavenger runs
SCAVENGE_INTERVAL_SECONDS: Final = 60.0
#: the age of a job without a TTL at which it is deleted
SCAVENGE_AFTER_SECONDS: Final = 30 * 60.0
#: what is added to a job's TTL
SCAVENGE_GRACE_SECONDS: Final = 5 * 60.0


def age_limit(job: Mapping[str, Any]) -> float:
    ttl = spec_of(job).get("ttl")
    seconds = parse_duration(str(ttl)) if ttl else 0.0
    return seconds + SCAVENGE_GRACE_SECONDS if seconds > 0 else SCAVENGE_AFTER_SECONDS


class Scavenger:
    """Deletes old jobs at most once per `SCAVENGE_INTERVAL_SECONDS` of the clock."""

    def __init__(self, backend: MigrationBackend, clock: Callable[[], float]) -> None:
        self.backend, self.clock = backend, clock
        self._last: float | None = None
        #: jobs deleted since the process started (the metric's source)
        self.deleted = 0

    def due(self) -> bool:
        return self._last is None or self.clock() - self._last >= SCAVENGE_INTERVAL_SECONDS

    def run(self) -> list[str]:
        """One pass when due; the names of the jobs deleted."""
        if not self.due():
            return []
        now = self._last = self.clock()
        deleted: list[str] = []
        for job in self.backend.list_jobs():
            created = parse_time(metadata_of(job).get("creationTimestamp"))
            if created is None or now - created < age_limit(job):
                continue
            name = name_of(job)
            try:
                if reservation := pmj.reservation_name(job):
                    self.backend.delete_reservation(reservation)
            except ApiError as exc:
                log.warning("scavenging PodMigrationJob %s: deleting Reservation %s: %s", name, reservation, exc)
                break
            try:
                self.backend.delete_job(name)
            except ApiError as exc:
                log.warning("failed to scavenge PodMigrationJob %s: %s", name, exc)
                continue
            log.info("scavenged PodMigrationJob %s (%s, created %.0fs ago)", name, pmj.phase_of(job), now - created)
            deleted.append(name)
        self.deleted += len(deleted)
        return deleted

"""What one round did, as values the command line prints and the metrics count: every node's
classification per pool, every eviction (or, under dry run, what would be evicted), every skip."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeEntry:
    name: str
    pool: str
    classification: str
    usage: dict[str, float]  # percent of allocatable
    thresholds: dict[str, dict[str, float]]
    note: str = ""  # why a node was not classified (no fresh NodeMetric)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "pool": self.pool,
            "classification": self.classification,
            "usage": self.usage,
            "thresholds": self.thresholds,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class EvictionEntry:
    pod: str  # namespace/name
    node: str
    plugin: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "node": self.node, "plugin": self.plugin, "reason": self.reason}


@dataclass(frozen=True)
class MigrationEntry:
    """A PodMigrationJob a plugin's eviction became (or, under dry run, would become)."""

    pod: str  # namespace/name
    mode: str
    reservation: str | None
    phase: str
    job: str = ""
    reason: str = ""
    message: str = ""  # said for a job that failed or was aborted: why

    @property
    def evicted(self) -> bool:
        """The job's pod was evicted (Koordinator's Evicting/EvictComplete reasons, or done)."""
        return self.phase == "Succeeded" or self.reason in ("Evicting", "EvictComplete")

    @property
    def ended_without_eviction(self) -> bool:
        return self.phase in ("Failed", "Aborted") and not self.evicted

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "mode": self.mode, "reservation": self.reservation, "phase": self.phase}
        if self.job:
            out["job"] = self.job
        if self.reason:
            out["reason"] = self.reason
        if self.message and self.phase in ("Failed", "Aborted"):
            out["message"] = self.message
        return out


@dataclass
class RoundReport:
    round: int
    dry_run: bool = False
    nodes: list[NodeEntry] = field(default_factory=list)
    evictions: list[EvictionEntry] = field(default_factory=list)
    #: evictions that were attempted and did not happen (a limit, a disruption budget, a failure)
    skipped: list[EvictionEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: plugins that raised and were skipped for this round, one line each
    failed_plugins: list[str] = field(default_factory=list)
    #: the PodMigrationJobs of the MigrationController when it migrates instead of evicting:
    #: created this round, and every job it reconciled
    migrations: list[MigrationEntry] = field(default_factory=list)
    #: evictions that became a PodMigrationJob this round: reported as evictions only once the
    #: job evicted the pod, as skips when it failed (`settle_migrations`)
    migrating: list[EvictionEntry] = field(default_factory=list)

    def settle_migrations(self) -> None:
        """After the jobs were reconciled: a pod whose job evicted it is an eviction; one whose job
        failed is a skip with the job's reason; one still migrating is listed under migrations only.
        A failed eviction is never reported as done."""
        jobs = {m.pod: m for m in self.migrations}
        for entry in self.migrating:
            job = jobs.get(entry.pod)
            if job is not None and job.evicted:
                self.evictions.append(entry)
            elif job is not None and job.ended_without_eviction:
                why = f"PodMigrationJob {job.job} {job.phase}: {job.reason}: {job.message}".rstrip(": ")
                self.skipped.append(EvictionEntry(entry.pod, entry.node, entry.plugin, why))
        self.migrating.clear()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "round": self.round,
            "nodes": [n.as_dict() for n in self.nodes],
            "evictions": [e.as_dict() for e in self.evictions],
        }
        if self.skipped:
            out["skipped"] = [e.as_dict() for e in self.skipped]
        if self.errors:
            out["errors"] = list(self.errors)
        if self.failed_plugins:
            out["failedPlugins"] = list(self.failed_plugins)
        if self.migrations:
            out["migrations"] = [m.as_dict() for m in self.migrations]
        return out

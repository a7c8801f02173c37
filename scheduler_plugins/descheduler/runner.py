"""The descheduler's round in memory: the one way `descheduler run` (with or without `--dry-run`,
over a directory or a cluster) and `colocate whatif` run the descheduler.

A round reads a `Snapshot` of the `DeschedulerView` (the nodes, the pods bound to each, the
NodeMetrics), runs every profile's Deschedule and Balance plugins through the framework and
returns its `RoundReport` (the evictions, asked or refused, and what each plugin decided); the
evictions go to the framework's eviction backend (the API's Eviction subresource, or
`StoreEvictions` offline), unless dry-run. Between rounds the PodMigrationJobs advance
(`between_rounds`). Rounds are numbered from 1.

The public types a caller needs are re-exported here (`__all__`).
"""

from __future__ import annotations

from colocate.cluster.store import ClusterStore
from scheduler_plugins.clock import Clock
from scheduler_plugins.descheduler.backends import StoreEvictions
from scheduler_plugins.descheduler.cluster import DeschedulerView
from scheduler_plugins.descheduler.framework.config import API_VERSION, KIND, DeschedulerConfig, parse_config
from scheduler_plugins.descheduler.framework.registry import Registry
from scheduler_plugins.descheduler.framework.report import MigrationEntry, RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.migration.backend import StoreMigrationBackend
from scheduler_plugins.descheduler.registry import installed_registry

__all__ = [
    "API_VERSION",
    "KIND",
    "DeschedulerConfig",
    "DeschedulerRunner",
    "RoundReport",
    "StoreEvictions",
    "installed_registry",
    "parse_config",
]


class DeschedulerRunner:
    """`descheduler`'s rounds over `view`, numbered from 1."""

    def __init__(self, descheduler: Descheduler, view: DeschedulerView) -> None:
        self.descheduler, self.view = descheduler, view
        self.number = 0
        #: when the last `step` ran a round (on the descheduler's clock)
        self.last: float | None = None

    @classmethod
    def over_store(
        cls,
        store: ClusterStore,
        config: DeschedulerConfig,
        clock: Clock,
        registry: Registry | None = None,
        dry_run: bool | None = None,
    ) -> DeschedulerRunner:
        """Offline, in memory: evictions delete from `store` (its PodDisruptionBudgets honoured) and
        the PodMigrationJobs live there too; `dry_run` None: the configuration's."""
        descheduler = Descheduler(
            config,
            registry or installed_registry(),
            clock,
            StoreEvictions(store),
            None,
            dry_run=dry_run,
            migrations=StoreMigrationBackend(store),
        )
        return cls(descheduler, DeschedulerView(store))

    def round(self) -> RoundReport:
        """The next round over the view's snapshot now (the view's lock held while it is taken)."""
        self.number += 1
        return self.descheduler.run_round(self.number, self.view.snapshot())

    def between_rounds(self) -> list[MigrationEntry]:
        """One pass over the PodMigrationJobs (Koordinator's controller requeues them every few seconds)."""
        return self.descheduler.reconcile_migrations()

    def scavenged_total(self) -> int:
        return self.descheduler.scavenged_total()

    def step(self, now: float) -> RoundReport | None:
        """`colocate whatif`'s turn at `now`: a round when `deschedulingInterval` has passed since the
        last `step`'s round (at the first step too; never when the interval is 0), else the
        PodMigrationJobs advance."""
        interval = self.descheduler.config.descheduling_interval
        if interval <= 0 or (self.last is not None and now - self.last < interval):
            if self.last is not None:
                self.between_rounds()
            return None
        self.last = now
        return self.round()

"""Running the manager: rounds driven by changes, for as long as the process lives (or N rounds).

`ManagerRounds` is the manager's round in memory, the one way `manager run` and `colocate whatif`
run it. A round reads what changed in the `ManagerView` since the last (nodes whose inputs
changed, NodeMetrics deleted, the slo-controller-config) and a `Snapshot` of it; it covers the
nodes whose inputs changed (every node after a config change, on becoming the leader, and every
`resync` seconds), and returns the `Round`: each node's plan and the writes (NodeMetric status,
batch/mid resources, NodeResourceTopology, NodeSLO spec) the `Writer` has applied, to the API
server or to an in-memory store. Under `run_rounds` it is calculated in a worker thread and its
writes applied there too (the API calls block). With leader election only the lease holder
reconciles, so two replicas never both write.

The public types a caller of a round needs are re-exported here (`__all__`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from colocate.cli.eventloop import wait_set
from scheduler_plugins.manager.cluster import ManagerView, Snapshot
from scheduler_plugins.manager.metrics import ManagerMetrics
from scheduler_plugins.manager.reconciler import Reconciler, Round, SpecWrite, StatusWrite, TopologyWrite
from scheduler_plugins.manager.writer import StoreWriter, Writer, kind_of

__all__ = [
    "Due",
    "ManagerMetrics",
    "ManagerRounds",
    "ManagerView",
    "Reconciler",
    "Round",
    "Schedule",
    "StoreWriter",
    "apply_round",
    "run_rounds",
]

log = logging.getLogger("colocate.manager")


@dataclass(frozen=True)
class Schedule:
    rounds: int | None  # None: forever
    resync: float  # seconds between full rounds


def apply_round(result: Round, reconciler: Reconciler, writer: Writer, metrics: ManagerMetrics) -> None:
    """Apply the writes of a round and account for them (runs in a worker thread)."""
    for issue in result.config_issues:
        metrics.config_errors.labels(issue.reason).inc()
    now = reconciler.clock()
    written: set[str] = set()
    for action in result.actions:
        done = writer.apply(action)
        if done is None:
            metrics.write_errors.labels(kind_of(action)).inc()
        elif isinstance(action, StatusWrite):
            reconciler.written(action.node, now)
            written.add(action.node)
        elif isinstance(action, TopologyWrite):
            reconciler.topology_written(action.node, now)
        elif isinstance(action, SpecWrite):
            reconciler.spec_written(action, done.stored)
    metrics.nodes_updated.inc(len(written))
    metrics.nodes_skipped.inc(sum(1 for plan in result.plans if plan.name not in written))
    metrics.degraded_nodes.set(len(reconciler.degraded))
    for plan in result.plans:
        for reason in plan.refused:
            metrics.inputs_refused.labels(reason).inc()


@dataclass(frozen=True)
class Due:
    """The nodes the next round covers (`names` None: every node)."""

    names: set[str] | None


@dataclass
class ManagerRounds:
    """The manager's rounds over `view`, calculated by `reconciler` and written by `writer`."""

    reconciler: Reconciler
    view: ManagerView
    writer: Writer
    metrics: ManagerMetrics

    def due(self, full: bool) -> Due | None:
        """Take the view's changes: the nodes the next round covers (every node when `full` or the
        config changed), None when no node's inputs changed. NodeMetrics deleted are forgotten."""
        changes = self.view.take_changes()
        self.reconciler.forget(changes.forgotten)
        names = None if full or changes.config else changes.nodes
        return None if names is not None and not names else Due(names)

    def run(self, due: Due, snapshot: Snapshot | None = None) -> Round:
        """The round over `snapshot` (the view's now when None), timed, its writes applied."""
        if snapshot is None:
            snapshot = self.view.snapshot()
        started = time.perf_counter()
        result = self.reconciler.reconcile(snapshot, due.names)
        self.metrics.calculation_duration.observe(time.perf_counter() - started)
        apply_round(result, self.reconciler, self.writer, self.metrics)
        return result


async def run_rounds(
    reconciler: Reconciler,
    view: ManagerView,
    writer: Writer,
    metrics: ManagerMetrics,
    schedule: Schedule,
    emit: Callable[[Round], None],
    leading: asyncio.Event | None = None,
    refresh: Callable[[], object] | None = None,
    config_events: Callable[[Round], None] | None = None,
) -> None:
    """Reconcile until cancelled (or `schedule.rounds` rounds); with `leading`, only while it is set."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def changed() -> None:
        loop.call_soon_threadsafe(wake.set)

    view.on_change = changed
    rounds = ManagerRounds(reconciler, view, writer, metrics)
    number, full, last_full = 0, True, time.monotonic()
    while schedule.rounds is None or number < schedule.rounds:
        if leading is not None and not leading.is_set():
            log.info("waiting to become the leader")
            await leading.wait()
            full = True
        if refresh is not None:
            await asyncio.to_thread(refresh)
        wake.clear()
        if time.monotonic() - last_full >= schedule.resync:
            full = True
        due = rounds.due(full)
        if due is not None:
            number += 1
            result = await asyncio.to_thread(rounds.run, due, view.snapshot())
            if config_events is not None and result.config_issues:
                await asyncio.to_thread(config_events, result)
            emit(result)
            if due.names is None:
                last_full = time.monotonic()
            full = False
        if schedule.rounds is not None:
            full = True
            continue
        if not await wait_set(wake, max(0.0, schedule.resync - (time.monotonic() - last_full))):
            full = True

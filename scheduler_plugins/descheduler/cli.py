"""`colocate descheduler run` (owned by scheduler_plugins.descheduler).

The edge: flags and files are read here, errors become one line and exit code 2; everything
below gets parsed values. Exit 0 when the rounds ran (evicting or not), 2 for bad input.

`--rounds N` runs N rounds back to back over the same state (what anomaly detection needs);
without it `deschedulingInterval` decides: 0 runs once, otherwise a round every interval for as
long as the process lives — a cluster component, with leader election (API server only),
`/healthz` and `/metrics`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from colocate.cli import errors, flags
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers, add_command_group
from colocate.cluster.files import scan_all_or_refuse
from colocate.cluster.store import ClusterStore
from policies.apis.field_errors import ConfigError
from policies.apis.manifests import ManifestError
from scheduler_plugins.clock import Clock, clock_at
from scheduler_plugins.descheduler.cluster import DESCHEDULER_KINDS, DeschedulerView
from scheduler_plugins.descheduler.framework.config import DeschedulerConfig, load_config
from scheduler_plugins.descheduler.framework.handle import EventSink, EvictionBackend, MigrationBackend
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.registry import installed_registry
from scheduler_plugins.descheduler.render import rounds_table
from scheduler_plugins.descheduler.runner import DeschedulerRunner
from scheduler_plugins.descheduler.service import Schedule

log = logging.getLogger("colocate.descheduler")

COMPONENT: Final = "koord-descheduler"


def register_commands(subparsers: Subparsers) -> None:
    """Add the `descheduler` command group."""
    commands = add_command_group(
        subparsers, "descheduler", help="relieve hot nodes (LowNodeLoad) through the Eviction API"
    )
    _run_flags(
        commands.add_parser(
            "run",
            help="run descheduling rounds: N, once, or every deschedulingInterval",
            description="Classify nodes by their NodeMetric usage and evict pods from hot nodes so that the "
            "scheduler can place them on cold ones. Exit 0 when the rounds ran, 2 for bad input.",
        )
    )


def _run_flags(run: argparse.ArgumentParser) -> None:
    flags.add_cluster_source(
        run,
        reads="Nodes, NodeMetrics, Pods and PodDisruptionBudgets; evictions only change the in-memory state",
        through="list and watch Nodes, NodeMetrics and Pods and evict through this kubeconfig "
        "(default without --cluster: the in-cluster service account)",
    )
    flags.add_watch(run)
    run.add_argument(
        "--config", required=True, metavar="FILE", help="DeschedulerConfiguration (descheduler/v1alpha2) YAML"
    )
    run.add_argument(
        "--dry-run", action="store_true", help="evict nothing; report what would be evicted (as `dryRun: true`)"
    )
    run.add_argument(
        "--rounds",
        type=int,
        metavar="N",
        help="run N rounds back to back (default: deschedulingInterval decides; 0 means once)",
    )
    run.add_argument("--now", help="fix the clock of every round to this RFC 3339 time (NodeMetric expiry)")
    add_output(run, ("table", "json"), default="table")
    run.set_defaults(func=run_command)


def document(reports: list[RoundReport], dry_run: bool) -> dict[str, Any]:
    return {"dryRun": dry_run, "rounds": [r.as_dict() for r in reports]}


def _print(doc: dict[str, Any], output: str, *, compact: bool = False) -> None:
    text = (
        (json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=2))
        if output == "json"
        else rounds_table(doc)
    )
    print(text, flush=True)  # a reader gone (`| head`) ends the command in colocate's main (exit 141)


def run_command(args: argparse.Namespace) -> int:
    registry = installed_registry()
    try:
        clock = clock_at(args.now)
        config = load_config(args.config, registry)
        rounds = rounds_to_run(args.rounds, config.descheduling_interval)
        schedule = Schedule(rounds, config.descheduling_interval)
        dry_run = bool(args.dry_run or config.dry_run)
        reports: list[RoundReport] = []

        def emit(report: RoundReport) -> None:
            if schedule.rounds is None:  # forever: one document per round, as it ends
                _print(document([report], dry_run), args.output, compact=True)
            else:
                reports.append(report)

        prepare = directory_rounds if args.cluster is not None else kube_rounds
        asyncio.run(prepare(args, Rounds(config, registry, clock, schedule, dry_run, emit)))
    except (ConfigError, errors.UsageError, ValueError) as exc:
        return errors.report(str(exc))
    if schedule.rounds is not None:
        _print(document(reports, dry_run), args.output)
    return errors.EXIT_OK


def rounds_to_run(requested: int | None, descheduling_interval: float) -> int | None:
    """How many rounds `--rounds` asks for (None: every deschedulingInterval until stopped).
    0 means once, as the flag's help says; so does no flag when deschedulingInterval is 0."""
    if requested is not None and requested < 0:
        raise ConfigError("--rounds", f"must be 0 (once) or more, got {requested}")
    if requested is not None:
        return max(requested, 1)
    return 1 if descheduling_interval == 0 else None


@dataclass(frozen=True)
class Rounds:
    """What `descheduler run` runs, from whichever cluster: the configuration and plugins, the
    clock, how many rounds, whether it evicts, and where each round's report goes."""

    config: DeschedulerConfig
    registry: Any
    clock: Clock
    schedule: Schedule
    dry_run: bool
    emit: Callable[[RoundReport], None]

    def descheduler(
        self, backend: EvictionBackend, events: EventSink | None, migrations: MigrationBackend
    ) -> Descheduler:
        return Descheduler(
            self.config, self.registry, self.clock, backend, events, dry_run=self.dry_run, migrations=migrations
        )


def directory_rounds(args: argparse.Namespace, rounds: Rounds) -> Coroutine[Any, Any, None]:
    """The rounds over a directory of manifests (re-read before each round when running forever)."""
    from scheduler_plugins.descheduler.backends import PDB_KIND

    store = ClusterStore((*DESCHEDULER_KINDS, PDB_KIND))  # offline, the budgets are ours to honour
    try:
        source = scan_all_or_refuse(args.cluster, store, f"--cluster {args.cluster}")
    except ManifestError as exc:
        raise errors.UsageError(str(exc)) from exc
    runner = DeschedulerRunner.over_store(store, rounds.config, rounds.clock, rounds.registry, rounds.dry_run)
    refresh = source.scan if rounds.schedule.rounds is None else None
    return serve(rounds, runner, store, api=None, refresh=refresh)


def kube_rounds(args: argparse.Namespace, rounds: Rounds) -> Coroutine[Any, Any, None]:
    """The rounds against the API server: list/watch, evict through policy/v1, Events."""
    from colocate.cluster.client import api_client_or_else
    from colocate.cluster.events import EventRecorder
    from colocate.cluster.eviction import EvictionClient
    from colocate.cluster.throttle import throttle

    connection = rounds.config.client_connection
    kubeconfig = args.kubeconfig or (Path(connection.kubeconfig) if connection.kubeconfig else None)
    api = throttle(
        api_client_or_else(kubeconfig, args.context, instead="--cluster DIR"), connection.qps, connection.burst
    )
    store = ClusterStore(DESCHEDULER_KINDS)
    view = DeschedulerView(store)
    from colocate.cluster.rest import ObjectClient
    from scheduler_plugins.descheduler.migration.backend import ApiMigrationBackend

    descheduler = rounds.descheduler(
        EvictionClient(api), EventRecorder(api, COMPONENT, socket.gethostname()), ApiMigrationBackend(ObjectClient(api))
    )
    return serve(
        rounds,
        DeschedulerRunner(descheduler, view),
        store,
        api=api,
        watch=(args.watch_timeout, args.backoff_max),
        in_cluster=kubeconfig is None,
    )


async def serve(
    rounds: Rounds,
    runner: DeschedulerRunner,
    store: ClusterStore,
    *,
    api: Any,
    refresh: Callable[[], object] | None = None,
    watch: tuple[int, float] = (300, 30.0),
    in_cluster: bool = False,
) -> None:
    """Watch (against an API server), serve the probes and hold the Lease while it runs unbounded,
    and run its rounds."""
    from prometheus_client import CollectorRegistry

    from colocate.cluster.metrics import StoreHealthMetrics
    from colocate.cluster.running import Beside, hold_lease, wait_listed
    from scheduler_plugins.descheduler.metrics import DeschedulerMetrics
    from scheduler_plugins.descheduler.service import health_servers, run_rounds

    registry = CollectorRegistry()
    metrics = DeschedulerMetrics(registry)
    store_metrics = StoreHealthMetrics(registry)
    store.on_failure = store_metrics.watch_failed
    leading: asyncio.Event | None = None
    async with Beside() as beside:
        if api is not None:
            from colocate.cluster.kube import KubeSource
            from colocate.cluster.reflector import ReflectorSettings
            from scheduler_plugins.descheduler.cluster import WATCHED_KINDS

            settings = ReflectorSettings(watch_timeout=watch[0], backoff_max=watch[1])
            beside.start(KubeSource(api, WATCHED_KINDS, store, settings).run())
        if rounds.schedule.rounds is None:
            probes = health_servers(
                *rounds.config.bind_addresses(in_cluster=in_cluster), lambda: store.synced(), registry
            )
            beside.stops.append(probes.stop)
            await probes.start()
            beside.start(store_metrics.export_forever(store))
            if api is not None and rounds.config.leader_election.leader_elect:
                leading = asyncio.Event()
                election = rounds.config.leader_election
                lease = (election.resource_namespace, election.resource_name)
                durations = (election.lease_duration, election.retry_period)
                beside.start(hold_lease(api, lease, durations, leading, metrics.leader, election.renew_deadline))
        await wait_listed(runner.view, bounded=rounds.schedule.rounds is not None)
        await run_rounds(runner, rounds.schedule, rounds.emit, metrics, leading, refresh)

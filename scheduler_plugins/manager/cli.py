"""`colocate manager plan|run` (owned by scheduler_plugins.manager).

The edge: flags and files are read here, errors become one line and exit code 2; everything below
gets parsed values. `plan` is one round over a directory as a freshly started manager whose clock
reads `--now`, nothing written; `run` is the controller (against an API server, or over a directory
whose objects change only in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from colocate.cli import errors, flags
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers, add_command_group
from colocate.cluster.files import scan_all_or_refuse
from colocate.cluster.metrics import StoreHealthMetrics
from colocate.cluster.running import Beside
from colocate.cluster.store import ClusterStore
from policies.apis.constants import SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE
from policies.apis.durations import parse_duration
from policies.apis.field_errors import ConfigError
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.manifests import ManifestError
from policies.apis.slo_config.rules import NestedTooDeep, load_json
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import Clock, clock_at, format_time
from scheduler_plugins.manager.cluster import ManagerView, manager_kinds, snapshot_of
from scheduler_plugins.manager.metrics import ManagerMetrics
from scheduler_plugins.manager.noderesource.plan import REASON_STALE
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE
from scheduler_plugins.manager.reconciler import Reconciler, Round
from scheduler_plugins.manager.render import plan_table
from scheduler_plugins.manager.writer import Writer

log = logging.getLogger("colocate.manager")

COMPONENT: Final = "koord-manager"
DEFAULT_LEASE: Final = "koordinator-manager"


def register_commands(subparsers: Subparsers) -> None:
    """Add the `manager` command group."""
    commands = add_command_group(
        subparsers, "manager", help="the slo-controller: batch and mid resources on nodes, NodeSLOs and NodeMetrics"
    )
    _plan_flags(
        commands.add_parser(
            "plan",
            help="one round over a directory, nothing written: each node's batch/mid resources, NodeSLO, NodeMetric",
            description="Read the Nodes, Pods, NodeMetrics, NodeResourceTopologies and the ConfigMap "
            f"{SLO_CONFIG_NAMESPACE}/{SLO_CONFIG_NAME} from DIR and print what a freshly started manager would "
            "write. Exit 0 when planned, 2 for bad input.",
        )
    )
    _run_flags(
        commands.add_parser(
            "run",
            help="run the controller: write batch/mid resources, NodeSLOs and NodeMetrics as the cluster changes",
            description="Watch Nodes, Pods, NodeMetrics, NodeResourceTopologies, NodeSLOs and the "
            "slo-controller-config and keep every node's batch and mid resources, NodeSLO and NodeMetric in line. "
            "Serves /healthz, /readyz and /metrics. Exit 2 for bad input.",
        )
    )


def _plan_flags(plan: argparse.ArgumentParser) -> None:
    flags.add_cluster_dir(
        plan, required=True, reads="Nodes, Pods, NodeMetrics, NodeResourceTopologies, the slo-controller-config"
    )
    plan.add_argument("--now", help="the manager's clock, an RFC 3339 time (default: the system clock)")
    plan.add_argument(
        "--last-sync",
        metavar="RFC3339",
        help="treat every node as last written at this time, so the update interval and the diff threshold "
        "decide `update` (default: every node is a first write)",
    )
    add_output(plan, ("json", "table"), default="table")
    plan.set_defaults(func=plan_command)


def _run_flags(run: argparse.ArgumentParser) -> None:
    flags.add_cluster_source(
        run,
        reads="as for plan; writes change only the in-memory objects",
        through="list, watch and write through this kubeconfig (default without --cluster: the in-cluster "
        "service account)",
    )
    flags.add_watch(run)
    run.add_argument("--now", help="fix the clock to this RFC 3339 time (default: the system clock)")
    run.add_argument("--rounds", type=int, metavar="N", help="stop after N rounds (default: run until stopped)")
    run.add_argument(
        "--resync-period", default="5m", metavar="DURATION", help="reconcile every node at least this often (5m)"
    )
    run.add_argument("--health-addr", default=":8000", metavar="HOST:PORT", help="/healthz and /readyz (:8000)")
    run.add_argument("--metrics-addr", default=":8080", metavar="HOST:PORT", help="/metrics (:8080)")
    run.add_argument(
        "--leader-elect",
        choices=("true", "false"),
        default="true",
        help="hold a Lease before writing, so only one replica writes (API server only; default true)",
    )
    run.add_argument("--leader-election-namespace", default=SLO_CONFIG_NAMESPACE, metavar="NS")
    run.add_argument("--leader-election-id", default=DEFAULT_LEASE, metavar="NAME", help="the Lease's name")
    run.add_argument("--lease-duration", default="15s", metavar="DURATION", help="the Lease's duration (15s)")
    run.add_argument("--retry-period", default="2s", metavar="DURATION", help="how often to renew the Lease (2s)")
    add_output(run, ("json",), default="json")
    flags.long_running(run)
    run.set_defaults(func=run_command)


def _load(directory: Path) -> ClusterStore:
    store = ClusterStore(manager_kinds(DEFAULT_TABLE.watched_kinds))
    try:
        scan_all_or_refuse(directory, store, f"--cluster {directory}")
    except ManifestError as exc:
        raise errors.UsageError(str(exc)) from exc
    _refuse_deep_config(store)
    return store


def _refuse_deep_config(store: ClusterStore) -> None:
    """A slo-controller-config document nested deeper than any config is malformed input, refused
    in one line as a manifest nested too deep is (`manager run` keeps its last good config instead)."""
    configmap = store.get("ConfigMap", (SLO_CONFIG_NAMESPACE, SLO_CONFIG_NAME)) or {}
    for key, text in (configmap.get("data") or {}).items():
        if isinstance(text, str):
            try:
                load_json(text)
            except NestedTooDeep as exc:
                raise errors.UsageError(
                    f"ConfigMap {SLO_CONFIG_NAMESPACE}/{SLO_CONFIG_NAME}: data.{key}: {exc}"
                ) from None
            except ValueError:
                pass  # a syntax error: reported in the plan's configErrors, as the manager reports it


def plan_document(store: ClusterStore, clock: Clock, last_sync: float | None) -> dict[str, Any]:
    """The `manager plan` document: one reconcile of every node."""
    reconciler = Reconciler(clock)
    snapshot = snapshot_of(store, DEFAULT_TABLE.watched_kinds)
    issues = reconciler.observe_config(snapshot.configmap)
    if last_sync is not None:
        for name in snapshot.nodes:
            reconciler.written(name, last_sync)
    result = reconciler.reconcile(snapshot)
    document: dict[str, Any] = {"nodes": [plan.as_dict() for plan in result.plans]}
    if result.failed:
        document["failedNodes"] = result.failed  # their objects could not be read (logged on stderr)
    if issues:
        document["configErrors"] = [{"reason": i.reason, "message": i.message} for i in issues]
    return document


def clock_warnings(store: ClusterStore, document: dict[str, Any], now: float) -> list[str]:
    """What the system clock did to a replayed snapshot, and the `--now` that replays it as it was
    (the newest NodeMetric's updateTime), as `scheduler simulate` and `explain` say it: judged at
    today's time, every NodeMetric of an old snapshot is stale and its node degraded."""
    stale = [n["name"] for n in document["nodes"] if str(n.get("reason", "")).startswith(REASON_STALE)]
    if not stale:
        return []
    stamps = [
        at
        for metric in store.objects(NODE_METRIC_KIND)
        if (at := parse_time(str((metric.get("status") or {}).get("updateTime") or ""))) is not None
    ]
    found = f"{len(stale)} of {len(document['nodes'])} nodes are degraded at {format_time(now)}: their NodeMetrics "
    found += "are older than degradeTimeMinutes"
    replay = f"pass --now {format_time(max(stamps))} (its newest NodeMetric)" if stamps else "pass --now"
    return [found, f"replaying a snapshot? {replay}"]


def _print(text: str) -> None:
    print(text, flush=True)  # a closed stdout raises BrokenPipeError to colocate's main


def plan_command(args: argparse.Namespace) -> int:
    try:
        clock = clock_at(args.now)
        last_sync = None
        if args.last_sync is not None:
            last_sync = parse_time(args.last_sync)
            if last_sync is None:
                raise ConfigError("--last-sync", f"not an RFC 3339 time: {args.last_sync!r}")
        store = _load(args.cluster)
        document = plan_document(store, clock, last_sync)
    except (ConfigError, errors.UsageError, ValueError) as exc:
        return errors.report(str(exc))
    if args.now is None:
        for warning in clock_warnings(store, document, clock()):
            print(f"warning: {warning}", file=sys.stderr)
    _print(json.dumps(document, indent=2) if args.output == "json" else plan_table(document))
    return errors.EXIT_OK


def _seconds(flag: str, text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise ConfigError(flag, f"not a duration: {text!r}") from exc
    if value <= 0:
        raise ConfigError(flag, f"must be positive, got {text!r}")
    return value


def run_command(args: argparse.Namespace) -> int:
    from scheduler_plugins.manager.service import Schedule

    try:
        clock = clock_at(args.now)
        if args.rounds is not None and args.rounds < 1:
            raise ConfigError("--rounds", f"must be at least 1, got {args.rounds}")
        schedule = Schedule(args.rounds, _seconds("--resync-period", args.resync_period))
        durations = (_seconds("--lease-duration", args.lease_duration), _seconds("--retry-period", args.retry_period))

        def emit(result: Round) -> None:
            doc = {"nodes": [plan.as_dict() for plan in result.plans]}
            _print(json.dumps(doc, separators=(",", ":")))

        asyncio.run(serve(args, clock, schedule, durations, emit))
    except (ConfigError, errors.UsageError, ValueError) as exc:
        return errors.report(str(exc))
    return errors.EXIT_OK


@dataclass
class _Wiring:
    """Where `run` reads and writes."""

    view: ManagerView
    writer: Writer
    leading: asyncio.Event | None = None
    """Set while this replica holds the Lease; None when it writes without electing."""
    config_events: Callable[[Round], None] | None = None
    """Records the slo-controller-config's problems as Events on it (against an API server only)."""


def _wire_directory(directory: Path) -> _Wiring:
    """`--cluster DIR`: the directory's objects, changed only in memory."""
    from scheduler_plugins.manager.writer import StoreWriter

    store = _load(directory)
    return _Wiring(ManagerView(store, DEFAULT_TABLE.watched_kinds), StoreWriter(store))


def _wire_api_server(
    args: argparse.Namespace,
    store_metrics: StoreHealthMetrics,
    metrics: ManagerMetrics,
    durations: tuple[float, float],
    beside: Beside,
) -> _Wiring:
    """Against an API server: watch into a store, write through the API, and (unless told not to)
    write only while holding the Lease."""
    from colocate.cluster.client import api_client_or_else
    from colocate.cluster.events import EventRecorder
    from colocate.cluster.kube import KubeSource
    from colocate.cluster.reflector import ReflectorSettings
    from colocate.cluster.running import hold_lease
    from scheduler_plugins.manager.cluster import watched_kinds
    from scheduler_plugins.manager.writer import KubeWriter

    api = api_client_or_else(args.kubeconfig, args.context, instead="--cluster DIR")
    store = ClusterStore(manager_kinds(DEFAULT_TABLE.watched_kinds))
    store.on_failure = store_metrics.watch_failed
    view = ManagerView(store, DEFAULT_TABLE.watched_kinds)
    recorder = EventRecorder(api, COMPONENT, socket.gethostname())

    def config_events(result: Round) -> None:
        configmap = view.snapshot().configmap
        if configmap is not None:
            for issue in result.config_issues:
                recorder.record(configmap, "Warning", issue.reason, issue.message)

    wiring = _Wiring(view, KubeWriter(api, recorder.record), config_events=config_events)
    settings = ReflectorSettings(watch_timeout=args.watch_timeout, backoff_max=args.backoff_max)
    beside.start(KubeSource(api, watched_kinds(DEFAULT_TABLE.watched_kinds), store, settings).run())
    if args.leader_elect == "true":
        wiring.leading = asyncio.Event()
        lease = (args.leader_election_namespace, args.leader_election_id)
        beside.start(hold_lease(api, lease, durations, wiring.leading, metrics.leader))
    return wiring


async def serve(
    args: argparse.Namespace,
    clock: Clock,
    schedule: Any,
    durations: tuple[float, float],
    emit: Callable[[Round], None],
) -> None:
    """Wire the manager to its cluster, serve its probes while it runs unbounded, and run its rounds."""
    from prometheus_client import CollectorRegistry

    from colocate.cli.flags import bind_address
    from colocate.cluster.probes import ProbeListeners, component_answers
    from colocate.cluster.running import wait_listed
    from scheduler_plugins.manager.service import run_rounds

    registry = CollectorRegistry()
    metrics = ManagerMetrics(registry)
    store_metrics = StoreHealthMetrics(registry)
    async with Beside() as beside:
        if args.cluster is not None:
            wiring = _wire_directory(args.cluster)
        else:
            wiring = _wire_api_server(args, store_metrics, metrics, durations, beside)
        view = wiring.view
        if schedule.rounds is None:
            answers = component_answers(view.store.readiness, registry)
            probes = ProbeListeners(bind_address(args.health_addr), bind_address(args.metrics_addr), answers)
            beside.stops.append(probes.stop)
            await probes.start()
            beside.start(store_metrics.export_forever(view.store))
        await wait_listed(view, bounded=schedule.rounds is not None)
        reconciler = Reconciler(clock)
        await run_rounds(
            reconciler, view, wiring.writer, metrics, schedule, emit, wiring.leading, None, wiring.config_events
        )

"""`colocate scheduler ...` subcommands (owned by scheduler_plugins).

This is the edge: arguments and files are read here, errors become exit codes and one-line
messages, and everything below receives parsed, typed values. Exit codes: 0 success (simulate:
even when pods stay unschedulable), 1 the pod cannot be placed (explain), 2 bad input.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Callable
from typing import Any, Final

import yaml

from colocate.cli import errors, flags
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers, add_command_group
from colocate.cli.progress import enabled as progress_enabled
from colocate.cluster.inputs import objects_of, read_documents
from policies.apis.feature_gates import FeatureGates
from policies.apis.field_errors import ConfigError
from policies.apis.manifests import ManifestError
from scheduler_plugins.clock import Clock, clock_at
from scheduler_plugins.scheduler.cluster.client import InMemoryClient
from scheduler_plugins.scheduler.cluster.sources import ClusterSource, SnapshotDirectorySource, extender_kinds
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.errors import SnapshotError
from scheduler_plugins.scheduler.framework.config import SchedulerConfig, load_config
from scheduler_plugins.scheduler.framework.features import KNOWN_GATES, scheduler_gates
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.plugins.elasticquota import args as elasticquota_args
from scheduler_plugins.scheduler.plugins.elasticquota import plugin as elasticquota
from scheduler_plugins.scheduler.plugins.elasticquota.report import quota_report
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import installed_registry
from scheduler_plugins.scheduler.runner import SchedulerRunner
from scheduler_plugins.scheduler.simulator import render
from scheduler_plugins.scheduler.simulator.clockcheck import ClockCheck, expiration_seconds
from scheduler_plugins.scheduler.simulator.explain import explain
from scheduler_plugins.scheduler.wiring import build_framework

EXIT_OK, EXIT_UNSCHEDULABLE = 0, 1


def _add_feature_gates(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help=f"scheduler feature gates (known: {', '.join(sorted(KNOWN_GATES))})",
    )


def register_commands(subparsers: Subparsers) -> None:
    """Add the `scheduler` command group and its subcommands."""
    commands = add_command_group(subparsers, "scheduler", help="scheduling framework, extender and simulator")
    _extender_flags(
        commands.add_parser("extender", help="serve filter/prioritize/bind as a kube-scheduler HTTP extender")
    )
    _simulate_flags(
        commands.add_parser(
            "simulate",
            help="schedule the pending pods of a snapshot and report placements",
            description="Schedule the pending pods of a snapshot (a directory, or the cluster listed once) "
            "with the profile's plugins, in memory: nothing is written to the cluster. Exit 0 done (even "
            "with unschedulable pods), 2 bad input or a snapshot without Nodes. NodeMetrics and "
            "Reservations are judged at --now (default: now); a warning says when that ages them.",
        )
    )
    _explain_flags(
        commands.add_parser(
            "explain",
            help="show every node's filter and score outcome for one pod",
            description="Run one pod through the profile's filters and scores on every node of a snapshot "
            "(a directory, or the cluster listed once). Exit 0 a node was selected, 1 none fits, 2 bad input.",
        )
    )
    _quota_flags(commands.add_parser("quota", help="print the ElasticQuota tree: min, max, request, used and runtime"))


def _extender_flags(ext: argparse.ArgumentParser) -> None:
    flags.long_running(ext)
    ext.add_argument("--port", type=int, default=8888)
    ext.add_argument("--host", default="127.0.0.1")
    ext.add_argument("--config", help="KubeSchedulerConfiguration YAML (default: the built-in profile)")
    flags.add_cluster_source(
        ext,
        reads="Nodes, NodeMetrics, Pods and the CRD objects the plugins read, read once",
        through="list and watch Nodes, NodeMetrics, bound Pods (and the CRD objects the "
        "plugins read) through this kubeconfig, and "
        "bind through it (default without --cluster: the in-cluster service account)",
    )
    flags.add_watch(ext)
    ext.add_argument("--url-prefix", default="/scheduler", help="path prefix the verbs are served under")
    ext.add_argument("--scheduler-name", help="profile to use (default: the first)")
    ext.add_argument("--now", help="fix the clock to this RFC 3339 time (replaying an old snapshot)")
    _add_feature_gates(ext)
    ext.set_defaults(func=run_extender)


def _profile_flags(parser: argparse.ArgumentParser) -> None:
    """The profile a snapshot is judged with, and (`--now`) the time it is judged at."""
    parser.add_argument("--config", help="KubeSchedulerConfiguration YAML")
    parser.add_argument("--now", help="RFC 3339 time metric expiry is judged against (default: now)")
    add_output(parser, ("table", "json"), default="table")


_LISTED_ONCE: Final = "list the cluster once through this kubeconfig instead of --cluster"
_SCHEDULED_READS: Final = (
    "Nodes, NodeMetrics, Pods, Reservations, PodGroups, ElasticQuotas, Devices and NodeResourceTopologies"
)


def _simulate_flags(sim: argparse.ArgumentParser) -> None:
    flags.add_cluster_source(
        sim, required=True, reads=f"{_SCHEDULED_READS}; the pending Pods are scheduled", through=_LISTED_ONCE
    )
    _profile_flags(sim)
    flags.add_progress(sim)
    _add_feature_gates(sim)
    sim.set_defaults(func=run_simulate)


def _explain_flags(exp: argparse.ArgumentParser) -> None:
    flags.add_cluster_source(exp, required=True, reads=_SCHEDULED_READS, through=_LISTED_ONCE)
    exp.add_argument(
        "--pod",
        required=True,
        metavar="FILE",
        help="the Pod to explain: a file, a directory, or - for stdin (YAML or JSON)",
    )
    _profile_flags(exp)
    _add_feature_gates(exp)
    exp.set_defaults(func=run_explain)


def _quota_flags(quota: argparse.ArgumentParser) -> None:
    listed = "list Nodes, live Pods and ElasticQuotas once through this kubeconfig"
    flags.add_cluster_source(quota, required=True, reads="Nodes, Pods and ElasticQuotas", through=listed)
    quota.add_argument("--config", help="KubeSchedulerConfiguration YAML (the ElasticQuota args are read from it)")
    add_output(quota, ("table", "json"), default="table")
    _add_feature_gates(quota)
    quota.set_defaults(func=run_quota)


def _fail(message: str) -> int:
    return errors.report(message)


def _config(path: str | None) -> SchedulerConfig:
    return load_config(path, installed_registry())


def _settle() -> None:
    """The snapshot is loaded and mostly static: keep it out of the cyclic GC's generations, so
    collections during scheduling do not walk it (long pauses on big clusters)."""
    gc.collect()
    gc.freeze()


def _emit(report: dict[str, Any], output: str, as_table: Callable[[dict[str, Any]], str]) -> None:
    # a reader that leaves (`... | head`) is handled once for every command, by `colocate`'s main
    print(json.dumps(report, indent=2) if output == "json" else as_table(report), flush=True)


def _features(args: argparse.Namespace) -> FeatureGates:
    return scheduler_gates(args.feature_gates)


def _snapshot(args: argparse.Namespace, config: SchedulerConfig) -> ClusterState:
    """The directory of --cluster, else the cluster of --kubeconfig listed once (nothing is written)."""
    if args.cluster is not None:
        return SnapshotDirectorySource(args.cluster).load()
    from scheduler_plugins.scheduler.cluster.sources import load_live_once

    return load_live_once(_api(args), config.profile().plugin_names())


def _warn_about_the_clock(
    args: argparse.Namespace, config: SchedulerConfig, clock: Clock, cluster: ClusterState
) -> None:
    check = ClockCheck(clock(), args.now is not None, expiration_seconds(config))
    for warning in check.warnings(cluster):
        print(f"warning: {warning}", file=sys.stderr)


def run_simulate(args: argparse.Namespace) -> int:
    try:
        clock, config, features = clock_at(args.now), _config(args.config), _features(args)
        cluster = _snapshot(args, config)
        if not cluster.nodes:
            where = f"--cluster {args.cluster}" if args.cluster is not None else "the cluster"
            raise SnapshotError(f"{where}: no Nodes: there is nothing to schedule the pods onto")
        runner = SchedulerRunner(config, cluster, clock, features=features)
    except (ConfigError, SnapshotError) as exc:
        return _fail(str(exc))
    _warn_about_the_clock(args, config, clock, cluster)
    progress = progress_enabled(args.progress)
    _settle()
    report = runner.simulate(progress)
    _emit(report.as_dict(), args.output, render.simulation_table)
    return EXIT_OK


def _read_pod(location: str) -> PodInfo:
    """The one Pod at `location`: a file, a directory or `-` (stdin), like `apply -f`, so that
    `colocate apply ... | colocate scheduler explain --pod -` explains the pod as admitted."""
    try:
        objects = objects_of(read_documents([location], sys.stdin))
    except ManifestError as exc:
        raise SnapshotError(str(exc)) from exc
    pods = [o for o in objects if o.get("kind", "Pod") == "Pod"]
    if len(pods) != 1:
        raise SnapshotError(
            f"{'<stdin>' if location == '-' else location}: expected exactly one Pod, found {len(pods)}"
        )
    return PodInfo(pods[0])


def run_explain(args: argparse.Namespace) -> int:
    try:
        clock, config, features = clock_at(args.now), _config(args.config), _features(args)
        cluster = _snapshot(args, config)
        pod = _read_pod(args.pod)
        framework = build_framework(config, installed_registry(), cluster, clock, features=features)
    except (ConfigError, SnapshotError, yaml.YAMLError) as exc:
        return _fail(str(exc))
    _warn_about_the_clock(args, config, clock, cluster)
    report = explain(framework, cluster, pod)
    _emit(report, args.output, render.explain_table)
    return EXIT_OK if report["selected"] else EXIT_UNSCHEDULABLE


def _api(args: argparse.Namespace) -> Any:
    """The API client of `--kubeconfig` (else the pod's service account)."""
    from colocate.cluster.client import api_client_or_else

    return api_client_or_else(args.kubeconfig, args.context, instead="--cluster DIR")


def _extender_source(args: argparse.Namespace, config: SchedulerConfig) -> ClusterSource:
    """The snapshot directory, or the API server (kubeconfig, else the pod's service account),
    watching the kinds the enabled plugins read."""
    if args.cluster is not None:
        return SnapshotDirectorySource(args.cluster)
    from colocate.cluster.reflector import ReflectorSettings
    from scheduler_plugins.scheduler.cluster.sources import ApiServerClusterSource

    try:
        plugins = config.profile(args.scheduler_name).plugin_names()
    except KeyError as exc:
        raise ConfigError("--scheduler-name", str(exc.args[0])) from exc
    return ApiServerClusterSource(
        _api(args),
        ReflectorSettings(watch_timeout=args.watch_timeout, backoff_max=args.backoff_max),
        kinds=extender_kinds(plugins),
    )


def _quota_cluster(args: argparse.Namespace) -> ClusterState:
    if args.cluster is not None:
        return SnapshotDirectorySource(args.cluster).load()
    from scheduler_plugins.scheduler.cluster.sources import load_live_once

    return load_live_once(_api(args), [elasticquota.NAME])


def run_quota(args: argparse.Namespace) -> int:
    """The quota tree of the configuration's ElasticQuota args (defaults when it has none)."""
    try:
        config, features = _config(args.config), _features(args)
        quota_args = config.profile().args.get(elasticquota.NAME) or elasticquota_args.parse_args(None, "")
        cluster = _quota_cluster(args)
        plugin = elasticquota.ElasticQuota(quota_args, Handle(cluster, InMemoryClient(cluster), features=features))
        cluster.subscribe(plugin)
    except (ConfigError, SnapshotError) as exc:
        return _fail(str(exc))
    _emit(quota_report(plugin.manager), args.output, render.quota_table)
    return EXIT_OK


def run_extender(args: argparse.Namespace) -> int:
    from scheduler_plugins.scheduler.extender.server import serve

    try:
        clock, config, features = clock_at(args.now), _config(args.config), _features(args)
        source = _extender_source(args, config)
        return serve(
            config,
            source,
            host=args.host,
            port=args.port,
            url_prefix=args.url_prefix,
            scheduler_name=args.scheduler_name,
            clock=clock,
            features=features,
        )
    except (ConfigError, SnapshotError) as exc:
        return _fail(str(exc))

"""`colocate serve` and `colocate apply`: argument parsing only; the work is done elsewhere."""

from __future__ import annotations

import argparse
import errno
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from certs.cli import add_service_names
from colocate.cli import flags
from colocate.cli.errors import UsageError
from colocate.cli.eventloop import EVENT_LOOPS
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers
from webhook import plugin_flag
from webhook.connections import (
    DEFAULT_FIRST_REQUEST_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_HEALTH_ADDRESS,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_METRICS_ADDRESS,
    EXPOSITION_CACHE_SECONDS,
    MAX_EXPOSITION_CACHE_SECONDS,
    bind_address,
)
from webhook.workers import parse_workers

if TYPE_CHECKING:  # imported when `serve` runs: `colocate --version` and `apply` start without them
    from certs.manager import ManagerSettings
    from webhook.serve import ServeConfig

log = logging.getLogger("colocate.serve")


def _duration(text: str) -> float:
    from policies.apis.durations import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return seconds


def _serve(args: argparse.Namespace) -> int:
    from colocate.cluster.client import ClusterUnavailable
    from webhook.serve import run

    _check_serve_args(args)
    try:
        return run(_serve_config(args))
    except ClusterUnavailable as exc:
        raise UsageError(f"no cluster to read: {exc} (give --cluster DIR or --kubeconfig FILE)") from exc
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):  # the address to listen on
            where = getattr(exc, "where", f"{args.host}:{args.port}")  # webhook.serve.CannotListen
            raise UsageError(f"cannot listen on {where}: {os.strerror(exc.errno)}") from exc
        raise


def _check_serve_args(args: argparse.Namespace) -> None:
    """The flags' values that argparse cannot judge alone: one line and exit 2 for each mistake."""
    if args.cluster is not None and not args.cluster.is_dir():
        raise UsageError(f"--cluster {args.cluster}: not a directory")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UsageError(f"--kubeconfig {args.kubeconfig}: no such file")
    if args.self_managed_certs and args.cluster is not None:
        raise UsageError("--self-managed-certs needs the API server (a Lease, the Secret): drop --cluster")
    if args.client_ca is not None and not args.client_ca.is_file():
        raise UsageError(f"--client-ca {args.client_ca}: no such file")
    for flag, value in (
        ("--max-connections", args.max_connections),
        ("--first-request-timeout", args.first_request_timeout),
        ("--handshake-timeout", args.handshake_timeout),
        ("--idle-timeout", args.idle_timeout),
        ("--stuck-scan-after", args.stuck_scan_after),
    ):
        if value <= 0:
            raise UsageError(f"{flag}: must be greater than 0, got {value}")
    if not 0 <= args.metrics_cache <= MAX_EXPOSITION_CACHE_SECONDS:
        raise UsageError(f"--metrics-cache: must be 0..{MAX_EXPOSITION_CACHE_SECONDS:g}, got {args.metrics_cache}")
    if args.body_budget_bytes < args.max_body:
        raise UsageError(
            f"--body-budget-bytes {args.body_budget_bytes}: must hold at least one --max-body ({args.max_body})"
        )


def _self_managed(args: argparse.Namespace) -> ManagerSettings | None:
    """`--self-managed-certs`' settings, or None without it."""
    if not args.self_managed_certs:
        return None
    from certs.manager import ManagerSettings

    return ManagerSettings(
        namespace=args.cert_namespace,
        service=args.cert_service,
        secret=args.cert_secret,
        dns_names=tuple(args.dns_name),
        check_interval=args.cert_check_interval,
        settle=args.cert_settle,
    )


def _serve_config(args: argparse.Namespace) -> ServeConfig:
    """What `serve` runs with, from its checked flags."""
    from colocate.cluster.reflector import ReflectorSettings
    from webhook.connections import ConnectionLimits
    from webhook.serve import ServeConfig
    from webhook.snapshots import KubeSettings

    connections = ConnectionLimits(
        max_connections=args.max_connections,
        first_request_timeout=args.first_request_timeout,
        handshake_timeout=args.handshake_timeout,
        idle_timeout=args.idle_timeout,
        max_body_bytes=args.body_budget_bytes,
    )
    kube = KubeSettings(reflector=ReflectorSettings(watch_timeout=args.watch_timeout, backoff_max=args.backoff_max))
    return ServeConfig(
        cluster=args.cluster,
        cert_dir=args.cert_dir,
        port=args.port,
        host=args.host,
        dns_names=tuple(args.dns_name),
        workers=_workers(args.workers),
        max_body=args.max_body,
        reload_interval=args.reload_interval,
        log_level=flags.log_level(args),
        kubeconfig=args.kubeconfig,
        context=args.context,
        kube=kube,
        reuse_port=args.reuse_port,
        drain_delay=args.drain_delay,
        shutdown_timeout=args.shutdown_timeout,
        cert_reload_interval=args.cert_reload_interval,
        self_managed=_self_managed(args),
        connections=connections,
        client_ca=args.client_ca,
        stuck_scan_after=args.stuck_scan_after,
        audit_interval=args.audit_interval,
        event_loop=args.event_loop,
        refuse_sensitive_patches=args.refuse_sensitive_patches,
        admission_plugins=plugin_flag.admission_plugins(args),
        health_address=args.health_probe_bind_address,
        metrics_address=args.metrics_bind_address,
        metrics_cache=args.metrics_cache,
    )


def _workers(value: int | str) -> int:
    """`--workers` as a count: `auto` is resolved here, once, from the CPUs this process may use."""
    from webhook.workers import AUTO, detect_cpus

    if value != AUTO:
        return int(value)
    cpus = detect_cpus()
    log.info("--workers auto: %d server process(es) (%s)", cpus.workers, cpus.describe())
    return cpus.workers


def _apply(args: argparse.Namespace) -> int:
    from webhook.apply import ApplyOptions, run_apply

    admission_plugins = plugin_flag.admission_plugins(args)

    return run_apply(
        ApplyOptions(
            files=tuple(args.file),
            cluster=args.cluster,
            kubeconfig=args.kubeconfig,
            context=args.context,
            operation=args.operation.upper(),
            old_object=args.old_object,
            output=args.output,
            explain=args.explain,
            refuse_sensitive_patches=args.refuse_sensitive_patches,
            strict=args.strict,
            admission_plugins=admission_plugins,
        )
    )


def register_commands(subparsers: Subparsers) -> None:
    """Add `serve` and `apply`."""
    _add_serve(subparsers)
    _add_apply(subparsers)


def _add_serve(subparsers: Subparsers) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the HTTPS admission webhook",
        description="Serve Koordinator's webhook paths over HTTPS, reading the "
        "cluster state from a directory of manifests (--cluster) or "
        "from the API server (--kubeconfig, or the pod's service account).",
    )
    flags.long_running(serve)
    _add_source_flags(serve)
    _add_listener_flags(serve)
    _add_timing_flags(serve)
    _add_connection_limits(serve)
    _add_shutdown_flags(serve)
    _add_certificate_flags(serve)
    flags.add_refuse_sensitive_patches(serve)
    plugin_flag.add_admission_plugins(serve)
    flags.add_log_level(serve, hidden=True)  # the global `colocate --log-level` is the documented one
    serve.set_defaults(func=_serve)


def _add_source_flags(serve: argparse.ArgumentParser) -> None:
    """Where the cluster state comes from: a directory, or the API server."""
    flags.add_cluster_source(
        serve,
        reads="ClusterColocationProfiles, Namespaces, PriorityClasses, ...; "
        "embedded mode, changes are picked up while running",
        through="list and watch the cluster through this kubeconfig (default without --cluster: "
        "the in-cluster service account)",
        alias="--profiles",
    )


def _add_listener_flags(serve: argparse.ArgumentParser) -> None:
    """The webhook port, its processes and event loop, and the probe and metrics listeners."""
    serve.add_argument("--port", type=int, default=9443)
    serve.add_argument(
        "--host",
        default="0.0.0.0",
        metavar="H",
        help="address of the webhook's HTTPS listener (--port) only (default 0.0.0.0); the probes and "
        "/metrics listen on --health-probe-bind-address and --metrics-bind-address",
    )
    serve.add_argument(
        "--workers",
        type=parse_workers,
        default=1,
        metavar="N|auto",
        help="server processes sharing the port (SO_REUSEPORT); auto: one per CPU this process may "
        "use (affinity mask, lowered to the cgroup CPU limit rounded down). Default 1; the "
        "Deployment uses auto (docs/sizing.md)",
    )
    serve.add_argument(
        "--event-loop",
        choices=EVENT_LOOPS,
        default="auto",
        help="auto (default): uvloop where installed, else asyncio's own loop",
    )
    serve.add_argument(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help="largest AdmissionReview accepted (default: what kube-apiserver can send, an UPDATE "
        "with two objects of 3 MiB, plus 64 KiB)",
    )
    serve.add_argument(
        "--health-probe-bind-address",
        type=bind_address,
        default=DEFAULT_HEALTH_ADDRESS,
        metavar="HOST:PORT",
        help="serve /healthz and /readyz over HTTP here, not on the webhook port; --host does not "
        "govern it (default %(default)s)",
    )
    serve.add_argument(
        "--metrics-bind-address",
        type=bind_address,
        default=DEFAULT_METRICS_ADDRESS,
        metavar="HOST:PORT",
        help="serve /metrics over HTTP here, not on the webhook port; --host does not govern it; 0 turns "
        "it off (default %(default)s)",
    )
    flags.add_seconds(
        serve,
        "--metrics-cache",
        EXPOSITION_CACHE_SECONDS,
        "render /metrics at most once in this long; scrapes in between get the same answer "
        "(0: render every scrape) (default %(default)s)",
    )


def _add_timing_flags(serve: argparse.ArgumentParser) -> None:
    """How often the state is re-read and audited."""
    flags.add_seconds(serve, "--reload-interval", 1.0, "how often the --cluster directory is checked for changes")
    flags.add_seconds(
        serve,
        "--stuck-scan-after",
        30.0,
        "warn (and say so in the log every SECONDS) when a --cluster scan runs longer",
    )
    flags.add_watch(serve)
    serve.add_argument(
        "--audit-interval",
        type=_duration,
        default=0.0,
        metavar="DURATION",
        help="audit the running pods against the profiles this often (e.g. 10m), export the counts "
        "as metrics and, reading the API server, write PolicyReports (default: never)",
    )


def _add_connection_limits(serve: argparse.ArgumentParser) -> None:
    """What one client may hold (docs/serve.md: sizing)."""
    limits = serve.add_argument_group(
        "connections",
        "what one client may hold: a few thousand idle sockets must "
        "not exhaust the memory limit (docs/serve.md: sizing)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help=f"open connections per server process; more are closed at once (default {DEFAULT_MAX_CONNECTIONS})",
    )
    flags.add_seconds(
        limits,
        "--first-request-timeout",
        DEFAULT_FIRST_REQUEST_TIMEOUT,
        "a new connection must finish TLS and send a request within this; "
        "a request body must arrive within it too (default %(default)s)",
    )
    flags.add_seconds(
        limits,
        "--handshake-timeout",
        DEFAULT_HANDSHAKE_TIMEOUT,
        "a new connection must finish its TLS handshake within this; until it has, it is the "
        "first to be closed when the cap needs room (default %(default)s)",
    )
    budget = limits.add_argument(
        "--body-budget-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="BYTES",
        help="the bytes of all request bodies held at once, over all connections (one body's limit is "
        "--max-body); past it a request gets HTTP 503 (default 64 MiB)",
    )
    flags.add_alias(limits, "--max-body-bytes", of=budget)  # its name until 0.1: too close to --max-body
    flags.add_seconds(
        limits,
        "--idle-timeout",
        DEFAULT_IDLE_TIMEOUT,
        "close a kept-alive connection idle this long (default %(default)s)",
    )


def _add_shutdown_flags(serve: argparse.ArgumentParser) -> None:
    """What SIGTERM does, and sharing the port."""
    flags.add_seconds(
        serve, "--drain-delay", 5.0, "after SIGTERM, keep serving (not ready, closing connections) this long"
    )
    flags.add_seconds(serve, "--shutdown-timeout", 20.0, "then wait this long for in-flight requests")
    serve.add_argument(
        "--reuse-port", action="store_true", help="let several server processes bind the same port (SO_REUSEPORT)"
    )


def _add_certificate_flags(serve: argparse.ArgumentParser) -> None:
    """The serving certificates, their reload, and self-managed rotation."""
    certs = serve.add_argument_group("certificates")
    flags.add_cert_dir(certs, required=True, help="holds ca.crt, tls.crt, tls.key; generated when missing")
    flags.add_dns_names(certs)
    certs.add_argument(
        "--client-ca",
        type=Path,
        metavar="FILE",
        help="require a client certificate issued by this CA on the admission paths (the API "
        "server's admission kubeconfig presents one); probes and /metrics stay open",
    )
    flags.add_seconds(
        certs,
        "--cert-reload-interval",
        1.0,
        "how often the certificate files are checked; a new pair is served without restart",
    )
    managed = serve.add_argument_group(
        "self-managed certificates",
        "with --self-managed-certs the replicas elect a leader (a coordination.k8s.io "
        "Lease) that renews the Secret and both caBundles before expiry",
    )
    managed.add_argument("--self-managed-certs", action="store_true", help="rotate certificates from inside the server")
    add_service_names(managed)
    flags.add_seconds(managed, "--cert-check-interval", 60.0, "how often the leader checks whether rotation is due")
    flags.add_seconds(managed, "--cert-settle", 5.0, "after a new CA is trusted, wait this long before serving from it")


def _add_apply(subparsers: Subparsers) -> None:
    apply = subparsers.add_parser(
        "apply",
        help="run the admission chain offline on objects",
        description="Print the objects as the webhooks would admit them, in the shape "
        "they came in. Exit 0 admitted, 1 denied, 2 bad input (with --strict, also an invalid "
        "profile or cluster object, or a namespace the cluster does not have).",
    )
    flags.add_cluster_source(
        apply,
        reads="ClusterColocationProfiles, Namespaces, PriorityClasses, ...",
        through="read the profiles, namespaces and priority classes from the API server "
        "(listed once) instead of --cluster",
        required=True,
        alias="--profiles",
    )
    apply.add_argument(
        "-f",
        "--filename",
        dest="file",
        required=True,
        action="append",
        metavar="FILE",
        help="objects: a file, a directory, or - for stdin; YAML (several documents) or JSON, Lists too (repeatable)",
    )
    apply.add_argument("--operation", default="CREATE", type=str.upper, choices=["CREATE", "UPDATE", "DELETE"])
    apply.add_argument("--old-object", metavar="FILE", help="the object before the change (UPDATE)")
    add_output(apply, ("json", "yaml"), default="json")
    apply.add_argument(
        "--explain",
        action="store_true",
        help="say on stderr which profiles matched, what each changed and which security-sensitive fields it patches",
    )
    flags.add_refuse_sensitive_patches(apply)
    apply.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 2) instead of warning when a profile or cluster object is invalid and not used, "
        "or an object's namespace is not in the cluster: for CI",
    )
    plugin_flag.add_admission_plugins(apply)
    apply.set_defaults(func=_apply)

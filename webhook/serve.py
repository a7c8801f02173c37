"""`colocate serve`: start the HTTPS webhook, in one process or several sharing the port.

The cluster state comes from a directory (`--profiles`, the embedded mode) or from the API server
(`--kubeconfig`, or the pod's service account): see `webhook.snapshots`.

With `--workers N` the parent prepares certificates and the shared metrics directory, then starts N
processes that each bind the same port with SO_REUSEPORT and load the cluster state themselves;
the kernel spreads connections across them. SIGTERM/SIGINT stop every worker.

Shutdown is graceful because rolling updates are where webhooks fail admissions: on SIGTERM a
server fails readiness but keeps accepting for `drain_delay` (the Service needs that long to stop
sending it new connections), closing every connection after its response; then it stops listening,
finishes in-flight requests (up to `shutdown_timeout`) and closes idle keep-alive connections.
`drain_delay + shutdown_timeout` must stay below the pod's terminationGracePeriodSeconds.

Certificates are reloaded live (`webhook.tls_reload`): every process polls its files and loads a
new pair into its running TLS context. With `self_managed` one process per replica also takes part
in the Lease election and, while leader, rotates the Secret and caBundle (`certs.manager`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import ssl
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from certs.generate import ensure_serving_certs
from certs.manager import ManagerSettings, self_management, wait_for_projection
from certs.material import CertPaths
from colocate.cli import eventloop
from colocate.cli.jsonlog import dropped_lines, json_logging
from colocate.cluster.client import api_client
from colocate.cluster.compiled import ADMISSION, compiled_modules
from colocate.cluster.kinds import WatchedKind, transforms_of
from colocate.cluster.lookup import ObjectLookup
from colocate.cluster.probes import ProbeListeners
from colocate.cluster.store import ClusterStore
from webhook.connections import (
    DEFAULT_HEALTH_ADDRESS,
    DEFAULT_MAX_BODY,
    DEFAULT_METRICS_ADDRESS,
    EXPOSITION_CACHE_SECONDS,
    Address,
    ConnectionLimits,
    bind_address,
)
from webhook.gate import GatedSite
from webhook.live_reads import LiveReads
from webhook.memory import give_back_after_storms
from webhook.port import WebhookPort, build_server
from webhook.probes import PROBE_FLAGS, probe_listeners
from webhook.registry import Registry, default_routes
from webhook.server import Lifecycle
from webhook.snapshots import ApiServerSnapshots, DirectorySnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.tls_reload import CertReloader, LoadedChain, new_server_context
from webhook.watched import watched_kinds

log = logging.getLogger("colocate.serve")


@dataclass(frozen=True)
class ServeConfig:
    cluster: Path | None  # a directory of cluster objects; None: read the cluster from the API server
    cert_dir: Path
    port: int = 9443
    host: str = "0.0.0.0"
    dns_names: tuple[str, ...] = ()
    workers: int = 1
    max_body: int = DEFAULT_MAX_BODY
    reload_interval: float = 1.0
    drain_delay: float = 5.0
    shutdown_timeout: float = 20.0
    log_level: str = "info"
    kubeconfig: Path | None = None  # None (and no directory): the in-cluster service account
    context: str | None = None
    kube: KubeSettings = field(default_factory=KubeSettings)
    reuse_port: bool = False  # let separate server processes share the port (SO_REUSEPORT)
    cert_reload_interval: float = 1.0
    self_managed: ManagerSettings | None = None  # rotate certificates while holding the Lease
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    client_ca: Path | None = None  # admission paths need a client certificate issued by this CA
    stuck_scan_after: float = 30.0  # warn when a --cluster directory scan runs longer than this
    audit_interval: float = 0.0  # audit running pods (and write PolicyReports) this often; 0: never
    event_loop: str = "auto"  # colocate.cli.eventloop.EVENT_LOOPS: uvloop where installed
    refuse_sensitive_patches: bool = False  # policies/admission/patch_risks.py: refuse such profiles
    admission_plugins: tuple[str, ...] = ()  # installed plugins to enable (`webhook.plugins`)
    #: /healthz and /readyz, and /metrics, on their own listeners (None: metrics off; webhook.probes)
    health_address: Address | None = bind_address(DEFAULT_HEALTH_ADDRESS)
    metrics_address: Address | None = bind_address(DEFAULT_METRICS_ADDRESS)
    metrics_cache: float = EXPOSITION_CACHE_SECONDS


class CannotListen(OSError):
    """Binding one of the listeners failed: `where` says which (`host:port (flag)`)."""

    def __init__(self, where: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.where = where


async def _listen(start: Awaitable[None], where: str) -> None:
    try:
        await start
    except OSError as exc:
        raise CannotListen(where, exc) from exc


class Source(Protocol):
    store: ClusterStore

    async def run(self, state: StateHolder, on_reload: Any = None) -> None: ...


def served_kinds(config: ServeConfig, registry: Registry) -> tuple[WatchedKind, ...]:
    """What the routes read, and, when this process runs the background audit, what it reads:
    whole Pods. Without the audit, Pods are kept as metadata only (the quota tree's reads)."""
    if config.audit_interval <= 0:
        return watched_kinds(registry)
    from webhook.rollout.audit import AUDIT_READS

    return watched_kinds(registry, AUDIT_READS)


def make_source(config: ServeConfig, registry: Registry, metrics: Any) -> Source:
    """The directory source in embedded mode, else list/watch of the kinds the routes read."""
    kinds = served_kinds(config, registry)
    if config.cluster is not None:
        return DirectorySnapshots(
            config.cluster,
            interval=config.reload_interval,
            stuck_after=config.stuck_scan_after,
            transforms=transforms_of(kinds),
            refuse_sensitive=config.refuse_sensitive_patches,
        )
    return ApiServerSnapshots(
        api_client(config.kubeconfig, config.context),
        kinds,
        config.kube,
        on_failure=metrics.store_health.watch_failed,
        refuse_sensitive=config.refuse_sensitive_patches,
    )


def freeze_startup_heap() -> None:
    """Leave what exists once the first state is loaded out of every later garbage collection.

    Most of the heap then is modules, the Kubernetes client's classes and the first snapshot: it
    lives as long as the process. A full collection walks all of it (tens of milliseconds: what an
    admission waiting behind it sees as its p99), so it is moved to the permanent generation
    (`gc.freeze`); later snapshots are collected as usual. The first snapshot's own garbage, once
    it is replaced, is freed by reference counting, or kept if cyclic: bounded by that one snapshot.
    """
    gc.collect()  # start from a clean heap: nothing collectable is frozen
    gc.freeze()


def tls_context(paths: CertPaths) -> ssl.SSLContext:
    """A server context with the pair loaded once (no reload: for tools and tests)."""
    context = new_server_context()
    context.load_cert_chain(paths.cert, paths.key)
    return context


def require_client_certs(context: ssl.SSLContext, client_ca: Path) -> None:
    """Verify a client certificate against `client_ca` when one is sent (probes send none; the
    admission paths then refuse a request without one)."""
    context.load_verify_locations(cafile=str(client_ca))
    context.verify_mode = ssl.CERT_OPTIONAL


def cert_reloader(config: ServeConfig, metrics: Any) -> CertReloader:
    """The reloader of `config.cert_dir`, exporting expiry and reload results as metrics."""

    def export(chain: LoadedChain | None, error: str, *, initial: bool = False) -> None:
        if chain is None:
            metrics.cert_reloads.labels("error").inc()
            return
        if not initial:
            metrics.cert_reloads.labels("ok").inc()
        metrics.cert_expiry.labels("serving").set(chain.cert.not_valid_after_utc.timestamp())
        if chain.ca is not None:
            metrics.cert_expiry.labels("ca").set(chain.ca.not_valid_after_utc.timestamp())

    reloader = CertReloader(CertPaths(config.cert_dir), interval=config.cert_reload_interval, on_reload=export)
    reloader.load_initial()
    if reloader.current is not None:
        export(reloader.current, "", initial=True)
    return reloader


async def _export_dropped_log_lines(metrics: Any, interval: float = 1.0) -> None:
    exported = 0
    while True:
        dropped = dropped_lines()
        if dropped > exported:
            metrics.log_lines_dropped.inc(dropped - exported)
            exported = dropped
        await asyncio.sleep(interval)


def _background(
    config: ServeConfig,
    source: Source,
    state: StateHolder,
    metrics: Any,
    on_reload: Any,
    reloader: CertReloader,
    published: asyncio.Event | None = None,
) -> list[asyncio.Task[None]]:
    coroutines = [
        source.run(state, on_reload),
        metrics.store_health.export_forever(source.store),
        reloader.run(),
        _export_dropped_log_lines(metrics),
    ]
    if config.audit_interval > 0:
        coroutines.append(_audit(config, state, metrics, published or asyncio.Event()))
    if config.self_managed is not None:
        coroutines.append(
            self_management(api_client(config.kubeconfig, config.context), config.self_managed, _identity())
        )
    return [asyncio.create_task(c) for c in coroutines]


def _identity() -> str:
    """This process's name in the certificate Lease election."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _audit(config: ServeConfig, state: StateHolder, metrics: Any, published: asyncio.Event) -> Any:
    """The background audit on the served state; PolicyReports when the state comes from the API."""
    from webhook.rollout.background import AuditMetrics, audit_forever
    from webhook.rollout.reports import ReportWriter

    writer = None if config.cluster is not None else ReportWriter(api_client(config.kubeconfig, config.context))
    return audit_forever(
        state,
        default_routes(config.admission_plugins),
        config.audit_interval,
        AuditMetrics(None if metrics.multiprocess_dir else metrics.registry),
        writer,
        published,
    )


async def _stop_when_orphaned(parent_pid: int, signals: asyncio.Queue[int], interval: float = 1.0) -> None:
    """A worker whose parent died (SIGKILL, OOM) shuts down instead of serving on, unsupervised."""
    while os.getppid() == parent_pid:
        await asyncio.sleep(interval)
    log.warning("parent process %d is gone; shutting down (pid %d)", parent_pid, os.getpid())
    signals.put_nowait(signal.SIGTERM)


async def _first(*awaitables: Awaitable[object]) -> int:
    """The index of the awaitable that finished first; the others are cancelled."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return next(i for i, task in enumerate(tasks) if task in done)


def _on_reload(metrics: Any, published: asyncio.Event, loaded: asyncio.Event) -> Callable[[object], None]:
    """What every reload of the state tells: the audit (`published`), the first load (`loaded`:
    the start-up heap is frozen once) and the state's metrics (a kind whose objects are all gone
    says 0, not its old count)."""
    exported_kinds: set[str] = set()

    def on_reload(snapshot: object) -> None:
        published.set()
        if snapshot is None:
            metrics.state_reloads.labels("error").inc()
            return
        if not loaded.is_set():
            freeze_startup_heap()
        loaded.set()
        metrics.state_reloads.labels("ok").inc()
        metrics.state_problems.set(len(snapshot.problems))  # type: ignore[attr-defined]
        counts = {kind: len(objects) for kind, objects in snapshot.objects.items()}  # type: ignore[attr-defined]
        for kind in exported_kinds - counts.keys():
            counts[kind] = 0
        for kind, count in counts.items():
            metrics.state_objects.labels(kind).set(count)
        exported_kinds.update(counts)

    return on_reload


def _endpoints(
    config: ServeConfig,
    registry: Registry,
    state: StateHolder,
    metrics: Any,
    lifecycle: Lifecycle,
    reuse_port: bool | None,
) -> tuple[WebhookPort, ProbeListeners, GatedSite, CertReloader]:
    """The admission server behind its gated TLS site, the probe listeners, and the certificate
    reloader: everything the process listens with, not listening yet."""
    limits = config.connections
    server = build_server(
        registry,
        state,
        metrics,
        max_body=config.max_body,
        lifecycle=lifecycle,
        body_timeout=limits.first_request_timeout,
        client_certs=config.client_ca is not None,
        max_body_bytes=limits.max_body_bytes,
        max_connections=limits.max_connections,
        idle_timeout=limits.idle_timeout,
    )
    probes = probe_listeners(
        config.health_address,
        config.metrics_address,
        state,
        metrics,
        lifecycle,
        reuse_port=reuse_port,
        exposition_cache=config.metrics_cache,
    )
    reloader = cert_reloader(config, metrics)
    if config.client_ca is not None:
        require_client_certs(reloader.context, config.client_ca)
    site = GatedSite(
        server.connection,
        config.host,
        config.port,
        tls_context=reloader.context,
        limits=limits,
        metrics=metrics,
        reuse_port=reuse_port,
    )
    return server, probes, site, reloader


def _stop_signals() -> asyncio.Queue[int]:
    """SIGTERM and SIGINT, queued: the first starts the drain, a second cuts it short."""
    signals = asyncio.Queue[int]()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, signals.put_nowait, signum)
    return signals


def _log_serving(config: ServeConfig, probes: ProbeListeners) -> None:
    log.info(
        "serving admission webhooks on https://%s:%d, probes and metrics on %s "
        "(pid %d; hot path compiled: %d of %d modules)",
        config.host,
        config.port,
        ", ".join(
            f"http://{host}:{port} ({', '.join(sorted(paths))})" for (host, port), paths in probes.listeners.items()
        ),
        os.getpid(),
        len(compiled_modules(ADMISSION)),
        len(ADMISSION),
    )


async def _drain(config: ServeConfig, lifecycle: Lifecycle, signals: asyncio.Queue[int]) -> None:
    """Until the first signal, serve; then say not ready and drain for `drain_delay` (or until a second)."""
    await signals.get()
    lifecycle.draining = True
    log.info("shutting down (pid %d): not ready, draining for %.1fs", os.getpid(), config.drain_delay)
    try:
        await asyncio.wait_for(signals.get(), config.drain_delay)
    except TimeoutError:
        pass


async def serve_forever(
    config: ServeConfig, *, reuse_port: bool = False, parent_pid: int | None = None, listen_when_ready: bool = False
) -> None:
    """Run one server process until SIGTERM or SIGINT (or, for a worker, until its parent is gone).

    With `listen_when_ready` the port is bound only once the cluster state is loaded. Workers
    after the first share the port with SO_REUSEPORT, and the kernel hands connections to any
    socket bound to it: a worker still listing the cluster would answer admissions from an empty
    state while the pod's readiness probe, answered by another worker, says ready."""
    from webhook.metrics import WebhookMetrics  # imported here: multiprocess mode is chosen by env

    metrics = WebhookMetrics()
    state = StateHolder()
    registry = default_routes(config.admission_plugins)
    source = make_source(config, registry, metrics)
    if isinstance(source, ApiServerSnapshots):
        state.stale_seconds = source.stale_seconds  # /readyz: not ready once stale beyond the bound
        state.live_reads = LiveReads(ObjectLookup(source.api), metrics.live_reads)
    lifecycle = Lifecycle()
    published = asyncio.Event()  # set on every reload of the state (the audit waits for the first)
    loaded = asyncio.Event()
    on_reload = _on_reload(metrics, published, loaded)
    shared_port = reuse_port or config.reuse_port or None
    server, probes, site, reloader = _endpoints(config, registry, state, metrics, lifecycle, shared_port)
    signals = _stop_signals()
    tasks = _background(config, source, state, metrics, on_reload, reloader, published)
    if metrics.multiprocess_dir:  # the other workers' scrapes read our files, not our tallies
        tasks.append(asyncio.create_task(metrics.flush_periodically()))
    if parent_pid is not None:
        tasks.append(asyncio.create_task(_stop_when_orphaned(parent_pid, signals)))
    tasks.append(asyncio.create_task(give_back_after_storms(site)))
    try:
        if listen_when_ready and await _first(signals.get(), loaded.wait()) == 0:
            return  # stopped before the state was loaded: never listened, nothing to drain
        await _listen(probes.start(), probes.describe(PROBE_FLAGS))
        await _listen(site.start(), f"{config.host}:{config.port}")
        _log_serving(config, probes)
        await _drain(config, lifecycle, signals)
    finally:
        lifecycle.draining = True
        await site.stop()  # stop listening
        site.close_idle()  # kept-alive connections between requests: nothing to finish
        await server.shutdown(config.shutdown_timeout)  # finish in-flight requests, close the connections
        await probes.stop()
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=6.0)
        log.info("stopped (pid %d)", os.getpid())


def _worker(config: ServeConfig, parent_pid: int, index: int) -> None:
    with json_logging(config.log_level):  # a spawned process: the CLI's set-up is not inherited
        # The first worker listens at once (it answers the probes); the others once they are ready.
        eventloop.run(
            serve_forever(config, reuse_port=True, parent_pid=parent_pid, listen_when_ready=index > 0),
            config.event_loop,
        )


def run(config: ServeConfig) -> int:
    """Prepare certificates, then serve in this process or in `config.workers` processes."""
    with json_logging(config.log_level):  # a no-op under the CLI, which turned it on already
        if config.cluster is None:
            api_client(config.kubeconfig, config.context).close()  # fail now on an unusable kubeconfig
        if config.self_managed is not None and not CertPaths(config.cert_dir).complete():
            # In a cluster: the certificate comes from the Secret (created by the leader), never from here.
            management = self_management(
                api_client(config.kubeconfig, config.context), config.self_managed, _identity()
            )
            waiting = wait_for_projection(
                CertPaths(config.cert_dir), management, config.self_managed, config.cert_reload_interval
            )
            eventloop.run(waiting, config.event_loop)
        paths, created = ensure_serving_certs(config.cert_dir, config.dns_names)
        if created:
            log.info("generated a CA and serving certificate in %s (trust %s)", config.cert_dir, paths.ca)
        tls_context(paths)  # fail now, with a clear error, on unusable certificates
        eventloop.loop_factory(config.event_loop)  # and on an event loop that is not installed
        if config.workers <= 1:
            eventloop.run(serve_forever(config), config.event_loop)
            return 0
        return _run_workers(config)


def _run_workers(config: ServeConfig) -> int:
    metrics_dir = tempfile.mkdtemp(prefix="colocate-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    context = multiprocessing.get_context("spawn")
    # One process per replica takes part in the certificate Lease election; every one reloads.
    workers = [
        context.Process(
            target=_worker,
            args=(config if i == 0 else replace(config, self_managed=None, audit_interval=0.0), os.getpid(), i),
            name=f"colocate-worker-{i}",
        )
        for i in range(config.workers)
    ]
    for worker in workers:
        worker.start()

    def forward(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.is_alive() and worker.pid:
                os.kill(worker.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        for worker in workers:
            worker.join()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
    return max((w.exitcode or 0) for w in workers)

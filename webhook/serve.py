"""`colocate serve`: start the HTTPS webhook, in one process or several sharing the port.

With `--workers N` the parent prepares certificates and the shared metrics directory, then starts N
processes that each bind the same port with SO_REUSEPORT and load the cluster state themselves;
the kernel spreads connections across them. SIGTERM/SIGINT stop every worker.
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import shutil
import signal
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from certs.generate import CertPaths, ensure_serving_certs
from webhook.jsonlog import setup_logging
from webhook.registry import default_routes
from webhook.server import DEFAULT_MAX_BODY, build_app
from webhook.sources.directory import DirectorySource
from webhook.sources.state import StateHolder

log = logging.getLogger("colocate.serve")


@dataclass(frozen=True)
class ServeConfig:
    profiles: Path
    cert_dir: Path
    port: int = 9443
    host: str = "0.0.0.0"
    dns_names: tuple[str, ...] = ()
    workers: int = 1
    max_body: int = DEFAULT_MAX_BODY
    reload_interval: float = 1.0
    shutdown_timeout: float = 25.0
    log_level: str = "info"


def tls_context(paths: CertPaths) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(paths.cert, paths.key)
    return context


async def serve_forever(config: ServeConfig, *, reuse_port: bool = False) -> None:
    """Run one server process until SIGTERM or SIGINT."""
    from webhook.metrics import WebhookMetrics  # imported here: multiprocess mode is chosen by env

    metrics = WebhookMetrics()
    state = StateHolder()
    source = DirectorySource(config.profiles, interval=config.reload_interval)

    def on_reload(snapshot: object) -> None:
        if snapshot is None:
            metrics.state_reloads.labels("error").inc()
            return
        metrics.state_reloads.labels("ok").inc()
        metrics.state_problems.set(len(snapshot.problems))  # type: ignore[attr-defined]
        for kind, objects in snapshot.objects.items():  # type: ignore[attr-defined]
            metrics.state_objects.labels(kind).set(len(objects))

    app = build_app(default_routes(), state, metrics, max_body=config.max_body)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, ssl_context=tls_context(CertPaths(config.cert_dir)),
                       reuse_port=reuse_port or None, shutdown_timeout=config.shutdown_timeout, backlog=1024)
    await site.start()
    log.info("serving admission webhooks on https://%s:%d (pid %d)", config.host, config.port, os.getpid())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    reloader = asyncio.create_task(source.run(state, on_reload))
    try:
        await stop.wait()
    finally:
        log.info("shutting down (pid %d)", os.getpid())
        state.ready = False
        reloader.cancel()
        await runner.cleanup()


def _worker(config: ServeConfig) -> None:
    listener = setup_logging(config.log_level)
    try:
        asyncio.run(serve_forever(config, reuse_port=True))
    finally:
        listener.stop()


def run(config: ServeConfig) -> int:
    """Prepare certificates, then serve in this process or in `config.workers` processes."""
    listener = setup_logging(config.log_level)
    try:
        paths, created = ensure_serving_certs(config.cert_dir, config.dns_names)
        if created:
            log.info("generated a CA and serving certificate in %s (trust %s)", config.cert_dir, paths.ca)
        tls_context(paths)  # fail now, with a clear error, on unusable certificates
        if config.workers <= 1:
            asyncio.run(serve_forever(config))
            return 0
        return _run_workers(config)
    finally:
        listener.stop()


def _run_workers(config: ServeConfig) -> int:
    metrics_dir = tempfile.mkdtemp(prefix="colocate-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_worker, args=(config,), name=f"colocate-worker-{i}") for i in range(config.workers)]
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

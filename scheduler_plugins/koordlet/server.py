"""The aiohttp adapter of the agent: GET /healthz (alive), /readyz (200 once the states are synced
and the first collection ran), /metrics (Prometheus). Nothing else."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

Ready = Callable[[], bool]
READY_KEY: web.AppKey[Ready] = web.AppKey("ready")
REGISTRY_KEY = web.AppKey("registry", CollectorRegistry)


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    ready = request.app[READY_KEY]()
    return web.Response(text="ok" if ready else "not ready", status=200 if ready else 503)


async def metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[REGISTRY_KEY])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_app(ready: Callable[[], bool], registry: CollectorRegistry) -> web.Application:
    app = web.Application()
    app[READY_KEY] = ready
    app[REGISTRY_KEY] = registry
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def start(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple):
            return int(address[1])
    return 0

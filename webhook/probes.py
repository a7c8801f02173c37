"""Health probes and metrics on their own listener, as controller-runtime serves them.

controller-runtime's managers serve `/metrics` on `--metrics-bind-address` and `/healthz`,
`/readyz` on `--health-probe-bind-address`, never on the webhook port; so does `colocate serve`.
A scraper or a prober that misbehaves (five connections pipelining thousands of scrapes and reading
none took admissions down for a minute when they shared the port) then competes with nothing the
API server waits for. Both are plain HTTP, read by kubelet and Prometheus inside the cluster; the
NetworkPolicy says who may reach them (`manifests/deploy/networkpolicy.yaml`).

When both addresses are the same, one listener serves the three paths; `0` turns metrics off (as
controller-runtime's `--metrics-bind-address=0`). With `--workers` every worker listens on the
same addresses (SO_REUSEPORT), like on the webhook port: any worker answers, and in multiprocess
mode a scrape reads every worker's series.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from webhook.connections import Address
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.server import SERVER_NAME, Lifecycle, readiness
from webhook.state import StateHolder


def _text(status: int, text: str) -> web.Response:
    response = web.Response(status=status, text=text)
    response.headers["Server"] = SERVER_NAME
    return response


def probe_app(paths: set[str], state: StateHolder, metrics: WebhookMetrics, lifecycle: Lifecycle) -> web.Application:
    """`paths` of /healthz, /readyz and /metrics; GET and HEAD only (aiohttp answers 405, 404)."""
    routes: dict[str, Callable[[web.Request], web.Response]] = {
        "/healthz": lambda request: _text(200, "ok"),
        "/readyz": lambda request: _text(*readiness(lifecycle, state)),
        "/metrics": lambda request: web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE}),
    }
    app = web.Application()
    for path in sorted(paths):
        answer = routes[path]

        async def handle(request: web.Request, answer: Callable[[web.Request], web.Response] = answer) -> web.Response:
            return answer(request)

        app.router.add_get(path, handle)
    return app


class ProbeListeners:
    """The health and metrics listeners of one server process."""

    def __init__(
        self,
        health: Address | None,
        metrics_address: Address | None,
        state: StateHolder,
        metrics: WebhookMetrics,
        lifecycle: Lifecycle,
        *,
        reuse_port: bool | None = None,
    ) -> None:
        listeners: dict[Address, set[str]] = {}
        if health is not None:
            listeners.setdefault(health, set()).update({"/healthz", "/readyz"})
        if metrics_address is not None:
            listeners.setdefault(metrics_address, set()).add("/metrics")
        self.listeners = listeners
        self.state, self.metrics, self.lifecycle, self.reuse_port = state, metrics, lifecycle, reuse_port
        self.runners: list[web.AppRunner] = []

    def describe(self) -> str:
        flags = {"/healthz": "--health-probe-bind-address", "/metrics": "--metrics-bind-address"}
        return " or ".join(
            f"{host}:{port} ({', '.join(sorted({flags[p] for p in paths if p in flags}))})"
            for (host, port), paths in self.listeners.items()
        )

    async def start(self) -> None:
        for (host, port), paths in self.listeners.items():
            runner = web.AppRunner(
                probe_app(paths, self.state, self.metrics, self.lifecycle), access_log=None, shutdown_timeout=1.0
            )
            await runner.setup()
            self.runners.append(runner)
            await web.TCPSite(runner, host, port, reuse_port=self.reuse_port).start()

    async def stop(self) -> None:
        for runner in self.runners:
            await runner.cleanup()
        self.runners.clear()

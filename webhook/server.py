"""The aiohttp adapter: moves bytes between HTTPS and `webhook.admission.serve_review`.

Routes come from the handler registry; the app is built once and frozen at start-up. Besides the
admission paths it serves `/healthz` (process alive), `/readyz` (cluster state loaded and not
shutting down) and `/metrics` (Prometheus text) on the same listener.

While draining (after SIGTERM) every response carries `Connection: close`: API servers keep
reusing keep-alive connections to a terminating pod, so each one must be closed by us right after
a complete response, never mid-request.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from cli.jsonlog import ADMISSION_LOGGER, log_admission
from policies.admission import default_rand_int
from webhook.admission import ServedReview, malformed_response, serve_review
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.registry import Registry, Route
from webhook.review import MalformedReview, uid_from_prefix
from webhook.state import StateHolder

DEFAULT_MAX_BODY: Final = 8 * 1024 * 1024
_UID_SCAN_BYTES: Final = 64 * 1024


@dataclass
class Lifecycle:
    """Set `draining` on SIGTERM: readiness fails and connections are closed after each response."""

    draining: bool = False


STATE: Final = web.AppKey("state", StateHolder)
LIFECYCLE: Final = web.AppKey("lifecycle", Lifecycle)
METRICS: Final = web.AppKey("metrics", WebhookMetrics)

admission_log = logging.getLogger(ADMISSION_LOGGER)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _too_large(request: web.Request, route: Route, limit: int, started: float) -> ServedReview:
    prefix = await request.content.read(_UID_SCAN_BYTES)
    message = f"request body exceeds the {limit} byte limit"
    return malformed_response(MalformedReview(message, uid_from_prefix(prefix)), route.path, started)


def admission_handler(route: Route, state: StateHolder, metrics: WebhookMetrics, max_body: int,
                      rand_int: Callable[[int], int]) -> Handler:
    requests_ok = metrics.requests_total.labels(route.path, "200")
    latency = metrics.latency.labels(route.path)
    in_flight = metrics.in_flight.labels(route.path)

    async def handle(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        in_flight.inc()
        close = False
        try:
            if request.content_length is not None and request.content_length > max_body:
                served, close = await _too_large(request, route, max_body, started), True
            else:
                try:
                    body = await request.read()
                except web.HTTPRequestEntityTooLarge:
                    served, close = await _too_large(request, route, max_body, started), True
                else:
                    served = serve_review(route, body, state.snapshot, rand_int=rand_int,
                                          observe=metrics.observe_plugin)
        finally:
            in_flight.dec()
        (requests_ok if served.status == 200 else metrics.requests_total.labels(route.path, str(served.status))).inc()
        latency.observe(time.perf_counter() - started)
        metrics.count_profile_matches(served.record.get("matchedProfiles", ()))
        if served.outcome is not None and served.outcome.warnings:
            metrics.count_warn_only(served.outcome.warnings)
        log_admission(admission_log, served.record)
        response = web.Response(status=served.status, body=served.body, content_type="application/json")
        if close:
            response.force_close()
        return response

    return handle


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    if request.app[LIFECYCLE].draining:
        return web.Response(status=503, text="shutting down")
    if request.app[STATE].ready:
        return web.Response(text="ok")
    return web.Response(status=503, text="cluster state not loaded yet")


async def _close_when_draining(request: web.Request, response: web.StreamResponse) -> None:
    if request.app[LIFECYCLE].draining:
        response.force_close()


async def metrics_endpoint(request: web.Request) -> web.Response:
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE})


def build_app(registry: Registry, state: StateHolder, metrics: WebhookMetrics, *,
              max_body: int = DEFAULT_MAX_BODY, rand_int: Callable[[int], int] = default_rand_int,
              lifecycle: Lifecycle | None = None) -> web.Application:
    # aiohttp's own limit sits above ours so that we, not aiohttp, answer an oversized body.
    app = web.Application(client_max_size=max_body + 1)
    app[STATE] = state
    app[METRICS] = metrics
    app[LIFECYCLE] = lifecycle or Lifecycle()
    app.on_response_prepare.append(_close_when_draining)
    for route in registry.routes:
        app.router.add_post(route.path, admission_handler(route, state, metrics, max_body, rand_int))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_endpoint)
    return app

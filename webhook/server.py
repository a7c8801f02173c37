"""The aiohttp adapter: moves bytes between HTTPS and `webhook.admission.serve_review`.

Routes come from the handler registry; the app is built once and frozen at start-up. Besides the
admission paths it serves `/healthz` (process alive), `/readyz` (cluster state loaded and not
shutting down) and `/metrics` (Prometheus text) on the same listener.

While draining (after SIGTERM) every response carries `Connection: close`: API servers keep
reusing keep-alive connections to a terminating pod, so each one must be closed by us right after
a complete response, never mid-request.

Before a body is read: a `Content-Encoding` other than identity is refused (415), a body must
arrive within the first-request timeout (408), stay within `--max-body` (an AdmissionReview
answer, with the uid when its first 64 KiB hold it, chunked or not) and within the bytes all bodies
may hold at once (`BodyBudget`, 503). Each such refusal is counted by reason
(`colocate_webhook_refused_requests_total`) and closes the connection.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import hdrs, web

from cli.jsonlog import ADMISSION_LOGGER, log_admission
from policies.admission import default_rand_int
from webhook.admission import ServedReview, http_error, malformed_response, serve_review
from webhook.gate import request_started
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.registry import Registry, Route
from webhook.review import MalformedReview, uid_from_prefix
from webhook.state import StateHolder

DEFAULT_MAX_BODY: Final = 8 * 1024 * 1024
SERVER_NAME: Final = "colocate"
_UID_SCAN_BYTES: Final = 64 * 1024
_READ_CHUNK: Final = 256 * 1024
_JSON: Final = {hdrs.CONTENT_TYPE: "application/json", hdrs.SERVER: SERVER_NAME}  # copied by each Response


@dataclass
class Lifecycle:
    """Set `draining` on SIGTERM: readiness fails and connections are closed after each response."""

    draining: bool = False


STATE: Final = web.AppKey("state", StateHolder)
LIFECYCLE: Final = web.AppKey("lifecycle", Lifecycle)
METRICS: Final = web.AppKey("metrics", WebhookMetrics)
#: what kubelet probes and Prometheus read, without a client certificate
OPEN_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})

admission_log = logging.getLogger(ADMISSION_LOGGER)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _refused_encoding(request: web.Request) -> str | None:
    """Why the body must not be read: the API server never compresses, a gzip bomb inflates 1000x."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return None
    return f"Content-Encoding {encoding[:32]!r} is not accepted: send the AdmissionReview uncompressed"


def _too_large(route: Route, limit: int, started: float, prefix: bytes) -> ServedReview:
    message = f"request body exceeds the {limit} byte limit"
    return malformed_response(MalformedReview(message, uid_from_prefix(prefix[:_UID_SCAN_BYTES])), route.path,
                              started, "too_large")


class BodyBudget:
    """Bytes of request bodies held at once, over every connection of this process.

    The connection cap bounds sockets, not what they send: a thousand connections each sending
    most of `--max-body` would hold gigabytes. Past `limit` a request is refused (HTTP 503, the
    connection closed) instead; admission bodies are a few KiB, so only a flood meets it.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit, self.used = limit, 0

    def take(self, size: int) -> bool:
        if self.limit is not None and self.used + size > self.limit:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


async def _read_body(request: web.Request, limit: int, budget: BodyBudget, held: list[int]) -> tuple[bytes, str]:
    """(body, "") or (its start, "too_large" or "busy"); `held[0]` is what was taken from `budget`."""
    if request.content_length is not None and request.content_length > limit:
        return await request.content.read(_UID_SCAN_BYTES), "too_large"
    body = bytearray()
    while chunk := await request.content.read(_READ_CHUNK):
        if not budget.take(len(chunk)):
            return bytes(body[:_UID_SCAN_BYTES]), "busy"
        held[0] += len(chunk)
        body += chunk
        if len(body) > limit:
            return bytes(body[:_UID_SCAN_BYTES]), "too_large"
    return bytes(body), ""


def _arrived(request: web.Request, limit: int) -> bool:
    """Whether the whole body, of a declared length within `limit`, is already buffered (the usual
    case: an AdmissionReview of a few KiB arrives with its headers)."""
    length = request.content_length
    return length is not None and length <= limit and request.content.is_eof()


def _take_arrived(request: web.Request, budget: BodyBudget, held: list[int]) -> tuple[bytes, str]:
    """`_read_body` for a body `_arrived` says is all here: the same budget, without awaiting."""
    body = request.content.read_nowait()
    if not budget.take(len(body)):
        return body[:_UID_SCAN_BYTES], "busy"
    held[0] += len(body)
    return body, ""


def admission_handler(route: Route, state: StateHolder, metrics: WebhookMetrics, max_body: int,
                      rand_int: Callable[[int], int], body_timeout: float | None = None,
                      budget: BodyBudget | None = None, lifecycle: Lifecycle | None = None,
                      client_certs: bool = False) -> Handler:
    """The handler of one admission path: what `_guarded` does for the other paths, inline (this
    one runs for every admission), then the body, `serve_review`, metrics and the log line."""
    budget = budget or BodyBudget()
    lifecycle = lifecycle or Lifecycle()
    series = metrics.route_series(route)
    in_flight = series.in_flight

    async def handle(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        request_started(request)
        if client_certs and not _has_client_cert(request):
            return _finish(lifecycle, _no_client_cert())
        in_flight.inc()
        close = False
        try:
            refused = _refused_encoding(request)
            if refused is not None:  # answered before a byte of the body is read; the connection is closed
                served, close = http_error(refused, started, route.path, 415, "encoding"), True
            else:
                held = [0]
                try:
                    if _arrived(request, max_body):  # nothing to wait for: no timer to arm and cancel
                        body, refused = _take_arrived(request, budget, held)
                    else:
                        async with asyncio.timeout(body_timeout):
                            body, refused = await _read_body(request, max_body, budget, held)
                    if refused == "too_large":
                        served, close = _too_large(route, max_body, started, body), True
                    elif refused == "busy":
                        message = f"request bodies being received exceed {budget.limit} bytes: try again"
                        served, close = http_error(message, started, route.path, 503, "busy"), True
                    else:
                        served = serve_review(route, body, state.snapshot, rand_int=rand_int,
                                              observe=metrics.observe_plugin)
                except TimeoutError:
                    message = f"request body not received within {body_timeout}s"
                    served, close = http_error(message, started, route.path, 408, "slow_body"), True
                finally:
                    budget.give(held[0])
        finally:
            in_flight.dec()
        if served.status == 200:
            series.requests_ok.inc()
        else:  # statuses are the handler's own closed set
            metrics.tally(metrics.requests_total, route.path, str(served.status)).inc()
        if served.refused:  # one of admission.REFUSALS
            metrics.tally(metrics.refused, route.path, served.refused).inc()
        series.latency.observe(time.perf_counter() - started)
        matched = served.record.get("matchedProfiles")
        if matched:
            metrics.count_profile_matches(matched)
        if served.outcome is not None and served.outcome.warnings:
            metrics.count_warn_only(served.outcome.warnings)
        log_admission(admission_log, served.record)
        response = web.Response(status=served.status, body=served.body, headers=_JSON)
        if close or lifecycle.draining:
            response.force_close()
        return response

    return handle


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    if request.app[LIFECYCLE].draining:
        return web.Response(status=503, text="shutting down")
    state = request.app[STATE]
    if state.ready:
        problems = state.snapshot.problems
        if problems:  # still ready: the last good objects are served; but say so
            return web.Response(text=f"ok, with {len(problems)} problem(s) in the cluster state "
                                     f"(see colocate_cluster_state_problems and the log); first: "
                                     f"{problems[0].source}: {problems[0].message}"[:1000])
        return web.Response(text="ok")
    return web.Response(status=503, text="cluster state not loaded yet")


def _guarded(handler: Handler, lifecycle: Lifecycle, client_certs: bool) -> Handler:
    """What every response of this server needs, around a handler of a path other than an admission
    path (those do it inline: no middleware, whose extra coroutine every admission would pay).

    The connection's gate learns that a request arrived (its first-request deadline is met). With
    `client_certs`, any path but the probes and /metrics needs a verified client certificate. And,
    decided before the response is prepared, where aiohttp chooses its Connection header: while
    draining, the response after which the server closes the connection must say
    `Connection: close`, or a client may pick the connection up for its next request at the instant
    it is closed, and a POST whose bytes were written is not retried (Go's transport).
    """
    async def guarded(request: web.Request) -> web.StreamResponse:
        request_started(request)
        if client_certs and request.path not in OPEN_PATHS and not _has_client_cert(request):
            return _finish(lifecycle, _no_client_cert())
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            _finish(lifecycle, exc)
            raise
        return _finish(lifecycle, response)

    return guarded


def _has_client_cert(request: web.Request) -> bool:
    """With --client-ca the TLS layer verifies a certificate when one is sent; here one must be."""
    transport = request.transport
    return transport is not None and bool(transport.get_extra_info("peercert"))


def _no_client_cert() -> web.Response:
    return web.Response(status=403, text="a client certificate issued by --client-ca is required")


def _finish(lifecycle: Lifecycle, response: web.StreamResponse) -> web.StreamResponse:
    """The Server header names no versions; while draining the connection closes after this response."""
    response.headers[hdrs.SERVER] = SERVER_NAME
    if lifecycle.draining:
        response.force_close()
    return response


def _unrouted(known: dict[str, tuple[str, ...]]) -> Handler:
    """404 for a path no route serves, 405 (with Allow) for a known path asked with another method:
    aiohttp's own answers, here so that they too pass `_guarded`."""
    async def unrouted(request: web.Request) -> web.StreamResponse:
        methods = known.get(request.path)
        if methods is None:
            raise web.HTTPNotFound()
        raise web.HTTPMethodNotAllowed(request.method, methods)

    return unrouted


async def metrics_endpoint(request: web.Request) -> web.Response:
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE})


def build_app(registry: Registry, state: StateHolder, metrics: WebhookMetrics, *,
              max_body: int = DEFAULT_MAX_BODY, rand_int: Callable[[int], int] = default_rand_int,
              lifecycle: Lifecycle | None = None, body_timeout: float | None = None,
              client_certs: bool = False, max_body_bytes: int | None = None) -> web.Application:
    """`body_timeout`: a request body must arrive within it; `client_certs`: admission paths need a
    verified client certificate (the TLS context asks for one: `--client-ca`); `max_body_bytes`:
    the request bodies all routes may hold at once (`BodyBudget`)."""
    budget = BodyBudget(max_body_bytes)
    lifecycle = lifecycle or Lifecycle()
    # aiohttp's own limit sits above ours so that we, not aiohttp, answer an oversized body.
    app = web.Application(client_max_size=max_body + 1)
    app[STATE] = state
    app[METRICS] = metrics
    app[LIFECYCLE] = lifecycle
    known: dict[str, tuple[str, ...]] = {}
    for route in registry.routes:
        app.router.add_post(route.path, admission_handler(route, state, metrics, max_body, rand_int, body_timeout,
                                                          budget, lifecycle, client_certs))
        known[route.path] = ("POST",)
    for path, handler in (("/healthz", healthz), ("/readyz", readyz), ("/metrics", metrics_endpoint)):
        app.router.add_get(path, _guarded(handler, lifecycle, client_certs))
        known[path] = ("GET", "HEAD")
    # Last: whatever the routes above do not answer (another path, another method).
    app.router.add_route("*", "/{path:.*}", _guarded(_unrouted(known), lifecycle, client_certs))
    return app

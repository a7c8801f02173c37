"""The webhook port's application: moves bytes between HTTP and `webhook.admission.serve_review`.

Routes come from the handler registry and are fixed at start-up. Besides the admission paths the
port serves `/healthz` (process alive), `/readyz` (cluster state loaded and not shutting down) and
`/metrics` (Prometheus text); any other path is a 404, a known path asked with another method a
405 with `Allow`. The HTTP framing, limits and deadlines are `webhook.http1`'s.

While draining (after SIGTERM) every answer carries `Connection: close`: API servers keep reusing
keep-alive connections to a terminating pod, so each one must be closed by us right after a
complete response, never mid-request.

Before a body is read: a `Content-Encoding` other than identity is refused (415), and with
`--client-ca` an admission needs a verified client certificate (403). A body must arrive within the
first-request timeout (408), stay within `--max-body` (an AdmissionReview answer, with the uid when
its first 64 KiB hold it, chunked or not) and within the bytes all bodies may hold at once
(`BodyBudget`, 503). Each such refusal is counted by reason
(`colocate_webhook_refused_requests_total`) and closes the connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cli.jsonlog import ADMISSION_LOGGER, log_admission
from policies.admission import default_rand_int
from webhook.admission import ServedReview, http_error, malformed_response, serve_review
from webhook.connections import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY
from webhook.http1 import Answer, BodyBudget, HttpLimits, HttpServer, Request
from webhook.metrics import CONTENT_TYPE, RouteSeries, WebhookMetrics
from webhook.registry import Registry, Route
from webhook.review import MalformedReview, uid_from_prefix
from webhook.state import StateHolder

SERVER_NAME: Final = "colocate"
_JSON: Final = b"application/json"
_ADMISSION_METHODS: Final = b"Allow: POST\r\n"
_PROBE_METHODS: Final = b"Allow: GET,HEAD\r\n"
#: what kubelet probes and Prometheus read, without a client certificate
OPEN_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})

admission_log = logging.getLogger(ADMISSION_LOGGER)


@dataclass
class Lifecycle:
    """Set `draining` on SIGTERM: readiness fails and connections are closed after each response."""

    draining: bool = False


def _refused_encoding(request: Request) -> str | None:
    """Why the body must not be read: the API server never compresses, a gzip bomb inflates 1000x."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return None
    return f"Content-Encoding {encoding[:32]!r} is not accepted: send the AdmissionReview uncompressed"


def _too_large(route: Route, limit: int, started: float, prefix: bytes) -> ServedReview:
    message = f"request body exceeds the {limit} byte limit"
    return malformed_response(MalformedReview(message, uid_from_prefix(prefix)), route.path, started, "too_large")


_NOT_FOUND: Final = Answer(404, b"404: Not Found")
_NO_CLIENT_CERT: Final = b"a client certificate issued by --client-ca is required"


class AdmissionEndpoint:
    """One admission path: refusals before the body, then `serve_review`, its metrics and log line."""

    def __init__(
        self,
        route: Route,
        state: StateHolder,
        metrics: WebhookMetrics,
        max_body: int,
        rand_int: Callable[[int], int],
        client_certs: bool,
        budget: BodyBudget,
    ) -> None:
        self.route, self.state, self.metrics = route, state, metrics
        self.max_body, self.rand_int, self.client_certs, self.budget = max_body, rand_int, client_certs, budget
        self.series: RouteSeries = metrics.route_series(route)

    def begin(self, request: Request) -> Answer | None:
        if self.client_certs and not request.peer_certificate():
            return Answer(403, _NO_CLIENT_CERT)
        self.series.in_flight.inc()
        request.context = self
        refused = _refused_encoding(request)
        if refused is not None:  # answered before a byte of the body is read; the connection is closed
            return self.answer(
                request, http_error(refused, request.started, self.route.path, 415, "encoding"), close=True
            )
        return None

    def complete(self, request: Request, body: bytes) -> Answer:
        served = serve_review(
            self.route, body, self.state.snapshot, rand_int=self.rand_int, observe=self.metrics.observe_plugin
        )
        return self.answer(request, served)

    def refused(self, request: Request, reason: str, prefix: bytes) -> Answer:
        route, started = self.route, request.started
        if reason == "too_large":
            served = _too_large(route, self.max_body, started, prefix)
        elif reason == "busy":
            message = f"request bodies being received exceed {self.budget.limit} bytes: try again"
            served = http_error(message, started, route.path, 503, "busy")
        else:
            message = f"request body not received within {request.connection.limits.body_timeout}s"
            served = http_error(message, started, route.path, 408, "slow_body")
        return self.answer(request, served, close=True)

    def abandoned(self, request: Request) -> None:
        request.context = None
        self.series.in_flight.dec()

    def answer(self, request: Request, served: ServedReview, close: bool = False) -> Answer:
        """Count, log and encode `served`: the request's last step, whatever ended it."""
        request.context = None
        metrics, series = self.metrics, self.series
        series.in_flight.dec()
        if served.status == 200:
            series.requests_ok.inc()
        else:  # statuses are the endpoint's own closed set
            metrics.tally(metrics.requests_total, self.route.path, str(served.status)).inc()
        if served.refused:  # one of admission.REFUSALS
            metrics.tally(metrics.refused, self.route.path, served.refused).inc()
        series.latency.observe(time.perf_counter() - request.started)
        matched = served.record.get("matchedProfiles")
        if matched:
            metrics.count_profile_matches(matched)
        if served.outcome is not None and served.outcome.warnings:
            metrics.count_warn_only(served.outcome.warnings)
        log_admission(admission_log, served.record)
        return Answer(served.status, served.body, _JSON, close=close)


class WebhookApp:
    """The port's routes, as `webhook.http1` asks for them (`http1.Application`)."""

    def __init__(
        self,
        registry: Registry,
        state: StateHolder,
        metrics: WebhookMetrics,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        rand_int: Callable[[int], int] = default_rand_int,
        lifecycle: Lifecycle | None = None,
        client_certs: bool = False,
        budget: BodyBudget | None = None,
    ) -> None:
        self.state, self.metrics = state, metrics
        self.lifecycle = lifecycle or Lifecycle()
        self.client_certs = client_certs
        self.budget = budget or BodyBudget()
        self.admissions = {
            route.path: AdmissionEndpoint(route, state, metrics, max_body, rand_int, client_certs, self.budget)
            for route in registry.routes
        }
        self.probes: dict[str, Callable[[], Answer]] = {
            "/healthz": lambda: Answer(200, b"ok"),
            "/readyz": self.readyz,
            "/metrics": self.scrape,
        }

    @property
    def draining(self) -> bool:
        return self.lifecycle.draining

    def begin(self, request: Request) -> Answer | None:
        path, method = request.path, request.method
        endpoint = self.admissions.get(path)
        if endpoint is not None and method == "POST":
            return endpoint.begin(request)
        if self.client_certs and path not in OPEN_PATHS and not request.peer_certificate():
            return Answer(403, _NO_CLIENT_CERT)
        if endpoint is not None:
            return Answer(405, b"405: Method Not Allowed", headers=_ADMISSION_METHODS)
        probe = self.probes.get(path)
        if probe is None:
            return _NOT_FOUND
        if method not in ("GET", "HEAD"):
            return Answer(405, b"405: Method Not Allowed", headers=_PROBE_METHODS)
        return probe()

    def complete(self, request: Request, body: bytes) -> Answer:
        endpoint: AdmissionEndpoint = request.context
        return endpoint.complete(request, body)

    def refused(self, request: Request, reason: str, prefix: bytes) -> Answer:
        endpoint: AdmissionEndpoint | None = request.context
        if endpoint is None:  # a request answered from its head whose body broke a limit
            return Answer(
                408 if reason == "slow_body" else 413 if reason == "too_large" else 503, reason.encode(), close=True
            )
        return endpoint.refused(request, reason, prefix)

    def abandoned(self, request: Request) -> None:
        endpoint: AdmissionEndpoint | None = request.context
        if endpoint is not None:
            endpoint.abandoned(request)

    def readyz(self) -> Answer:
        if self.lifecycle.draining:
            return Answer(503, b"shutting down")
        state = self.state
        if state.ready:
            problems = state.snapshot.problems
            if problems:  # still ready: the last good objects are served; but say so
                return Answer(
                    200,
                    (
                        f"ok, with {len(problems)} problem(s) in the cluster state "
                        f"(see colocate_cluster_state_problems and the log); first: "
                        f"{problems[0].source}: {problems[0].message}"[:1000]
                    ).encode(),
                )
            return Answer(200, b"ok")
        return Answer(503, b"cluster state not loaded yet")

    def scrape(self) -> Answer:
        return Answer(200, self.metrics.render(), CONTENT_TYPE.encode())


def build_server(
    registry: Registry,
    state: StateHolder,
    metrics: WebhookMetrics,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    rand_int: Callable[[int], int] = default_rand_int,
    lifecycle: Lifecycle | None = None,
    body_timeout: float | None = None,
    client_certs: bool = False,
    max_body_bytes: int | None = None,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
) -> HttpServer:
    """`body_timeout`: a request body must arrive within it; `client_certs`: admission paths need a
    verified client certificate (the TLS context asks for one: `--client-ca`); `max_body_bytes`:
    the request bodies all routes may hold at once (`BodyBudget`); `idle_timeout`: a kept-alive
    connection without a request, or a head not complete, is closed after it."""
    budget = BodyBudget(max_body_bytes)
    app = WebhookApp(
        registry,
        state,
        metrics,
        max_body=max_body,
        rand_int=rand_int,
        lifecycle=lifecycle,
        client_certs=client_certs,
        budget=budget,
    )
    limits = HttpLimits(max_body=max_body, body_timeout=body_timeout, idle_timeout=idle_timeout)
    return HttpServer(app, limits, server_name=SERVER_NAME, budget=budget)

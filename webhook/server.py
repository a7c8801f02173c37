"""The webhook port's answers: what an admission, a probe or a refusal says, counted and logged.

`webhook.port` moves bytes with aiohttp and calls these; this module is compiled with mypyc (it
runs for every admission), so it holds the synchronous part of a request: `serve_review`, the
metrics, the log line and the response object.

While draining (after SIGTERM) every answer carries `Connection: close`: API servers keep reusing
keep-alive connections to a terminating pod, so each one must be closed by us right after a
complete response, never mid-request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from colocate.cli.jsonlog import ADMISSION_LOGGER, log_admission
from colocate.cluster.store import stale_readiness
from webhook.admission import ServedReview, http_error, malformed_response, serve_review
from webhook.metrics import RouteSeries, WebhookMetrics
from webhook.registry import Route
from webhook.review import MalformedReview, uid_from_prefix
from webhook.state import StateHolder

SERVER_NAME: Final = "colocate"
#: what a too-large body is read of, for the uid it may carry
UID_SCAN_BYTES: Final = 64 * 1024
JSON: Final = "application/json"
#: every admission answer's headers, built once (aiohttp copies them into each response)
_JSON_HEADERS: Final = {"Content-Type": JSON, "Server": SERVER_NAME}
NO_CLIENT_CERT: Final = "a client certificate issued by --client-ca is required"

admission_log = logging.getLogger(ADMISSION_LOGGER)


@dataclass
class Lifecycle:
    """Set `draining` on SIGTERM: readiness fails and connections are closed after each response."""

    draining: bool = False


def refused_encoding(encoding: str | None) -> str | None:
    """Why the body must not be read: the API server never compresses, a gzip bomb inflates 1000x."""
    if encoding is None:
        return None
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    return f"Content-Encoding {encoding[:32]!r} is not accepted: send the AdmissionReview uncompressed"


def plain(status: int, text: str, close: bool = False) -> web.Response:
    """A text answer that names no versions (aiohttp's default Server header does)."""
    response = web.Response(status=status, text=text)
    response.headers["Server"] = SERVER_NAME
    if close:
        response.force_close()
    return response


class AdmissionEndpoint:
    """One admission path: `serve_review` or a refusal, then its metrics, log line and response."""

    def __init__(
        self, route: Route, state: StateHolder, metrics: WebhookMetrics, max_body: int, rand_int: Callable[[int], int]
    ) -> None:
        self.route, self.state, self.metrics = route, state, metrics
        self.max_body, self.rand_int = max_body, rand_int
        self.series: RouteSeries = metrics.route_series(route)

    def serve(self, body: bytes) -> ServedReview:
        return serve_review(
            self.route, body, self.state.snapshot, rand_int=self.rand_int, observe=self.metrics.observe_plugin
        )

    @property
    def reads_live(self) -> bool:
        """Whether a request may need a read from the API server first (`webhook.live_reads`)."""
        reads = self.state.live_reads
        return reads is not None and reads.wanted(self.route.kind)

    async def serve_reading(self, body: bytes) -> ServedReview:
        """`serve`, against the snapshot with what the request names and the watch has not shown."""
        snapshot = self.state.snapshot
        if self.state.live_reads is not None:
            snapshot = await self.state.live_reads.snapshot_for(body, snapshot)
        return serve_review(self.route, body, snapshot, rand_int=self.rand_int, observe=self.metrics.observe_plugin)

    def too_large(self, started: float, prefix: bytes) -> ServedReview:
        """An AdmissionReview denial with the uid when the first UID_SCAN_BYTES hold it."""
        message = f"request body exceeds the {self.max_body} byte limit"
        error = MalformedReview(message, uid_from_prefix(prefix[:UID_SCAN_BYTES]))
        return malformed_response(error, self.route.path, started, "too_large")

    def busy(self, started: float, limit: int | None) -> ServedReview:
        message = f"request bodies being received exceed {limit} bytes: try again"
        return http_error(message, started, self.route.path, 503, "busy")

    def slow_body(self, started: float, timeout: float | None) -> ServedReview:
        message = f"request body not received within {timeout}s"
        return http_error(message, started, self.route.path, 408, "slow_body")

    def encoding(self, started: float, refused: str) -> ServedReview:
        return http_error(refused, started, self.route.path, 415, "encoding")

    def answer(self, served: ServedReview, started: float, close: bool) -> web.Response:
        """Count, log and encode `served`: the request's last step, whatever ended it."""
        metrics, series = self.metrics, self.series
        if served.status == 200:
            series.requests_ok.inc()
        else:  # statuses are the endpoint's own closed set
            metrics.tally(metrics.requests_total, self.route.path, str(served.status)).inc()
        if served.refused:  # one of admission.REFUSALS
            metrics.tally(metrics.refused, self.route.path, served.refused).inc()
        series.latency.observe(time.perf_counter() - started)
        matched = served.record.get("matchedProfiles")
        if matched:
            metrics.count_profile_matches(matched)
        if served.outcome is not None and served.outcome.warnings:
            metrics.count_warn_only(served.outcome.warnings)
        log_admission(admission_log, served.record)
        response = web.Response(status=served.status, body=served.body, headers=_JSON_HEADERS)
        if close:
            response.force_close()
        return response


def readiness(lifecycle: Lifecycle, state: StateHolder) -> tuple[int, str]:
    """`/readyz`: ready once the cluster state is loaded, not while draining nor once a watch is
    broken beyond `STALE_READY_SECONDS`; problems (a kind not served first) are said."""
    if lifecycle.draining:
        return 503, "shutting down"
    if not state.ready:
        return 503, "cluster state not loaded yet"
    fresh, said = stale_readiness(state.stale_seconds())
    if not fresh:
        return 503, said
    problems = state.snapshot.problems
    if problems:  # still ready: the last good objects are served; but say so
        return 200, (
            f"{said}, with {len(problems)} problem(s) in the cluster state "
            f"(see colocate_cluster_state_problems and the log); first: "
            f"{problems[0].source}: {problems[0].message}"
        )[:1000]
    return 200, said

"""Routes with installed admission plugins are served off the event loop, within a deadline.

An installed plugin is code colocate does not know: one that blocks (a 20 s call to some service)
would stall every admission of the process, since the chain runs on the event loop (ordinary
admissions went to p99 9.9 s). So a route that has one (`webhook.plugins.installed_on`) is served
in a worker thread, and awaited for at most its deadline: the shortest `timeoutSeconds` of its
registrations less half a second, so that the answer reaches kube-apiserver before it gives up.
Past the deadline the request is answered as kube-apiserver answers a webhook that timed out, by
the route's failure policy: denied (500) on a `Fail` route, admitted unchanged on an `Ignore` one.
The late thread runs on (Python cannot stop it); at most `PLUGIN_WORKERS` run at once per route, and
while all are busy a request is answered by the failure policy at once rather than queued. Routes
without installed plugins stay on the event loop: the in-tree chain never blocks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import orjson

from webhook.admission import ServedReview, malformed_response, serve_review
from webhook.review import MalformedReview, build_review, parse_review

log = logging.getLogger("colocate.admission")

#: requests of one route being served by threads at once (each holds a thread until it ends)
PLUGIN_WORKERS: Final = 8
#: kube-apiserver's clock and ours differ by the network: answer this long before it gives up
DEADLINE_MARGIN: Final = 0.5
MIN_DEADLINE: Final = 0.5


def route_deadline(route: Any) -> float:
    """The shortest timeoutSeconds of the route's registrations, less DEADLINE_MARGIN."""
    shortest: int = min(route.timeout_seconds(registration) for registration in route.registrations)
    return max(MIN_DEADLINE, shortest - DEADLINE_MARGIN)


class PluginDeadline:
    """One route with installed plugins: its endpoint's `serve` in a worker thread, awaited for at
    most `deadline` seconds."""

    def __init__(self, endpoint: Any, plugins: list[str], workers: int = PLUGIN_WORKERS) -> None:
        route = endpoint.route
        self.endpoint, self.plugins = endpoint, ", ".join(plugins)
        self.deadline = route_deadline(route)
        self.ignore = all(registration.failure_policy == "Ignore" for registration in route.registrations)
        self.free = workers
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"plugins{route.path}")

    async def serve(self, body: bytes, started: float) -> ServedReview:
        if self.free == 0:
            return self._lapsed(body, started, f"all {PLUGIN_WORKERS} of its workers are still busy")
        self.free -= 1
        future = asyncio.get_running_loop().run_in_executor(self.executor, self._serve, body)
        future.add_done_callback(self._freed)
        try:
            served, observed = await asyncio.wait_for(asyncio.shield(future), self.deadline)
        except TimeoutError:
            return self._lapsed(body, started, f"it did not answer within {self.deadline:g}s")
        observe = self.endpoint.metrics.observe_plugin  # the metrics' tallies are the loop's alone
        for observation in observed:
            observe(*observation)
        return served

    def _serve(self, body: bytes) -> tuple[ServedReview, list[tuple[Any, ...]]]:
        """In a worker thread: the review, and the plugin timings to count on the loop."""
        observed: list[tuple[Any, ...]] = []
        endpoint = self.endpoint
        served = serve_review(
            endpoint.route,
            body,
            endpoint.state.snapshot,
            rand_int=endpoint.rand_int,
            observe=lambda *observation: observed.append(observation),
        )
        return served, observed

    def _freed(self, _: Any) -> None:
        self.free += 1

    def _lapsed(self, body: bytes, started: float, why: str) -> ServedReview:
        """The failure policy's answer for a request its plugins did not decide in time."""
        path = self.endpoint.route.path
        try:
            api_version, request = parse_review(body)
        except MalformedReview as error:
            return malformed_response(error, path, started)
        policy = "Ignore: admitted unchanged" if self.ignore else "Fail: denied"
        message = f"admission plugins {self.plugins} on {path}: {why} (failurePolicy {policy})"
        log.error("%s; uid %s", message, request.uid[:128])
        review = build_review(api_version, request.uid, self.ignore, code=200 if self.ignore else 500, message=message)
        record = {
            "uid": request.uid,
            "path": path,
            "operation": request.operation,
            "allowed": self.ignore,
            "code": 200 if self.ignore else 500,
            "message": message,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
        return ServedReview(200, orjson.dumps(review), record, refused="" if self.ignore else "internal_error")

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)

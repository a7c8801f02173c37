"""Per-stage cost of one admission, in process (no HTTP, no TLS): where colocate's own CPU goes.

Builds the admission benchmark's cluster state and pod AdmissionReview (`admission_bench.py`), then
times each stage of `/mutate-pod` and `/validate-pod` on its own, best of `--repeat` rounds of
`--number` calls, in microseconds per call: decode (orjson + `parse_review`), depth and shape checks,
copy, the plugins (match + mutate, or validate), the JSONPatch diff, response encoding, the JSON log
line (to a discarding stream), the server's metrics updates, and the whole `serve_review`.
Run: `.venv/bin/python benchmarks/admission_stages.py [--profiles 20] [--number 2000]`.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.admission_bench import review_body, write_state  # noqa: E402
from colocate.cli.jsonlog import ADMISSION_LOGGER, log_admission, setup_logging  # noqa: E402
from policies.admission.plugin import AdmissionContext  # noqa: E402
from policies.apis.jsonpatch_diff import diff  # noqa: E402
from policies.apis.shape import depth_error, object_error  # noqa: E402
from webhook.admission import run_route, serve_review  # noqa: E402
from webhook.metrics import WebhookMetrics  # noqa: E402
from webhook.registry import Route, default_routes  # noqa: E402
from webhook.review import build_review, parse_review  # noqa: E402
from webhook.snapshots import DirectorySnapshots  # noqa: E402


def best_us(call: Any, number: int, repeat: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def stages(
    route: Route, body: bytes, snapshot: Any, metrics: WebhookMetrics, number: int, repeat: int
) -> dict[str, float]:
    rand = lambda n: 0  # noqa: E731
    api_version, request = parse_review(body)
    obj = cast(dict[str, Any], request.object)
    outcome = run_route(route, request, snapshot, rand_int=rand)
    served = serve_review(route, body, snapshot, rand_int=rand)

    def plugins() -> None:
        ctx = AdmissionContext(request, snapshot, rand)
        working = route.copy_for_mutation(obj) if route.mutating else obj
        for plugin in route.plugins:
            if route.mutating:
                plugin.mutate(working, ctx)  # type: ignore[union-attr]
            else:
                plugin.validate(working, ctx)  # type: ignore[union-attr]

    working = outcome.object
    series = metrics.route_series(route)

    def server_metrics() -> None:  # what webhook.server's handler does per request (tallies; flushed per scrape)
        series.in_flight.inc()
        series.in_flight.dec()
        for plugin in route.plugins:
            metrics.observe_plugin(route, plugin.name, "CREATE", 0.00001, True)
        series.requests_ok.inc()
        series.latency.observe(0.0002)
        metrics.count_profile_matches(served.record.get("matchedProfiles", ()))

    admission_log = logging.getLogger(ADMISSION_LOGGER)
    result = {
        "decode (orjson + parse_review, incl. depth check)": best_us(lambda: parse_review(body), number, repeat),
        "  of which depth check": best_us(lambda: depth_error(obj, "request.object"), number, repeat),
        "shape check (object_error)": best_us(lambda: object_error(route.kind, obj), number, repeat),
        "copy for mutation": best_us(lambda: route.copy_for_mutation(obj), number, repeat) if route.mutating else 0.0,
        "plugins (match + mutate / validate, incl. copy)": best_us(plugins, number, repeat),
        "patch (diff)": best_us(lambda: diff(obj, working), number, repeat) if route.mutating else 0.0,
        "encode (build_review + orjson)": best_us(
            lambda: build_review(api_version, request.uid, True, patch=outcome.patch), number, repeat
        ),
        "log line (log_admission)": best_us(lambda: log_admission(admission_log, served.record), number, repeat),
        "metrics (server + per-plugin)": best_us(server_metrics, number, repeat),
        "whole serve_review": best_us(lambda: serve_review(route, body, snapshot, rand_int=rand), number, repeat),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=20)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    writer = setup_logging("info", io.StringIO())
    with tempfile.TemporaryDirectory() as tmp:
        write_state(Path(tmp) / "state", args.profiles)
        snapshot = DirectorySnapshots(Path(tmp) / "state").scan()
    assert snapshot is not None
    body = review_body()
    registry = default_routes()
    metrics = WebhookMetrics()
    print(f"{args.profiles} profiles, {len(body)} byte review, best of {args.repeat} x {args.number} calls, µs/call")
    for path in ("/mutate-pod", "/validate-pod"):
        route = next(r for r in registry.routes if r.path == path)
        print(f"\n{path}")
        for name, us in stages(route, body, snapshot, metrics, args.number, args.repeat).items():
            print(f"  {name:<50} {us:8.1f}")
    writer.stop()
    time.sleep(0)


if __name__ == "__main__":
    main()

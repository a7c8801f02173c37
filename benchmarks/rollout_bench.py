"""Rollout costs: the audit of 30,000 pods against 1,000 profiles, and warn-only profiles on the
admission hot path.

1. Audit: 1,000 profiles (one per team namespace, each selecting its team's app), 30,000 running
   pods (30 per namespace, the realistic ~4.7 KB pod of admission_bench) admitted by the chain,
   10 % of them then drifted (a label a profile writes removed). Prints the time and pods/s of
   `webhook.rollout.audit.audit`, of building the PolicyReports, and the process's peak memory
   growth (max RSS) while auditing.
2. Warn-only on the hot path: `webhook.admission.serve_review` (the whole admission minus aiohttp:
   parse, match, mutate, patch, response) on the same pod with 20 enforced profiles, then with 20
   warn-only profiles that do not match it, then with one and three that do. Prints requests/s and
   µs per request of one core.

Run: `.venv/bin/python benchmarks/rollout_bench.py [--pods 30000] [--profiles 1000]`.
"""

from __future__ import annotations

import argparse
import copy
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.admission_bench import realistic_pod, review_body  # noqa: E402
from colocate.cluster.files import read_manifest_file  # noqa: E402
from policies.admission.snapshot import ClusterSnapshot  # noqa: E402
from webhook.admission import serve_review  # noqa: E402
from webhook.chain import request_for, run_chain  # noqa: E402
from webhook.registry import default_routes  # noqa: E402
from webhook.rollout.audit import audit  # noqa: E402
from webhook.rollout.reports import policy_reports  # noqa: E402

REGISTRY = default_routes()
PRIORITY_CLASSES = read_manifest_file(REPO / "manifests" / "cluster" / "priorityclasses.yaml")
WARN = {"colocate.io/enforcement": "warn"}
ROUNDS = 3


def profile(name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": metadata,
        "spec": spec,
    }


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def snapshot(objects: list[dict[str, Any]]) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(("bench", o) for o in [*PRIORITY_CLASSES, *objects])


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def audit_benchmark(pod_count: int, profile_count: int) -> None:
    teams = [f"team-{i:04d}" for i in range(profile_count)]
    cluster = [namespace(t, {"team": t}) for t in teams] + [
        profile(
            t,
            {
                "namespaceSelector": {"matchLabels": {"team": t}},
                "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [f"app-{t}"]}]},
                "qosClass": "LS",
                "priorityClassName": "koord-prod",
                "labels": {"owner": t},
            },
        )
        for t in teams
    ]
    state = snapshot(cluster)
    template = realistic_pod()
    started = time.perf_counter()
    pods = []
    for index in range(pod_count):
        team = teams[index % profile_count]
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"pod-{index}", namespace=team, uid=f"uid-{index}", labels={"app": f"app-{team}"})
        result = run_chain(request_for(pod, REGISTRY), REGISTRY, state)
        assert result.allowed and result.object is not None, result.message
        admitted = {**result.object, "status": {"phase": "Running"}}
        if index % 10 == 0:  # drifted: a label the profile writes is gone
            admitted["metadata"] = {
                **admitted["metadata"],
                "labels": {k: v for k, v in admitted["metadata"]["labels"].items() if k != "owner"},
            }
        pods.append(admitted)
    admitted_seconds = time.perf_counter() - started
    state = snapshot([*cluster, *pods])
    del pods
    before = max_rss_mib()
    started = time.perf_counter()
    report = audit(state, REGISTRY)
    audit_seconds = time.perf_counter() - started
    grown = max_rss_mib() - before
    started = time.perf_counter()
    reports = policy_reports(report, int(time.time()))
    report_seconds = time.perf_counter() - started
    print(
        f"audit: {pod_count:,} running pods, {profile_count:,} profiles "
        f"(pods admitted through the chain in {admitted_seconds:.1f}s)"
    )
    print(
        f"  audit          {audit_seconds:7.2f} s  {pod_count / audit_seconds:9,.0f} pods/s  "
        f"drifted {len(report.drifted()):,} (expected {len(range(0, pod_count, 10)):,})"
    )
    print(
        f"  policy reports {report_seconds:7.2f} s  {len(reports):,} reports, "
        f"{sum(len(r['results']) for r in reports):,} results"
    )
    print(f"  peak memory growth while auditing: {grown:.0f} MiB (max RSS {max_rss_mib():.0f} MiB)")
    admissions_during_audit(state)


def _latencies(route: Any, body: bytes, state: ClusterSnapshot, keep_going: Callable[[int], bool]) -> list[float]:
    latencies = []
    while keep_going(len(latencies)):
        started = time.perf_counter()
        serve_review(route, body, state)
        latencies.append(time.perf_counter() - started)
    return sorted(latencies)


def admissions_during_audit(state: ClusterSnapshot) -> None:
    """`serve --audit-interval` audits in a thread of the serving process: what that does to admissions
    (the GIL is shared) is their latency while an audit runs, against the same admissions alone."""
    route = REGISTRY.by_path()["/mutate-pod"]
    body = review_body()
    alone = _latencies(route, body, state, lambda done: done < 5_000)
    auditing = threading.Thread(target=audit, args=(state, REGISTRY))
    auditing.start()
    during = _latencies(route, body, state, lambda done: auditing.is_alive())
    auditing.join()

    def show(label: str, values: list[float]) -> str:
        p50, p99, p999 = (values[min(len(values) - 1, int(len(values) * q))] for q in (0.5, 0.99, 0.999))
        return (
            f"  {label:28s} {len(values):6,} admissions  p50 {p50 * 1e6:6.0f} µs  p99 {p99 * 1e6:7.0f} µs  "
            f"p99.9 {p999 * 1e6:7.0f} µs  max {values[-1] * 1e3:6.1f} ms"
        )

    print("admissions on the same process, alone and while an audit runs in a thread:")
    print(show("alone", alone))
    print(show("during the audit", during))


def hot_path_benchmark(requests: int) -> None:
    route = REGISTRY.by_path()["/mutate-pod"]
    body = review_body()
    base = [
        namespace("analytics", {"koordinator.sh/enable-colocation": "true"}),
        profile(
            "colocation-profile-example",
            {
                "namespaceSelector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                "selector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                "qosClass": "BE",
                "priorityClassName": "koord-batch",
                "labels": {"koordinator.sh/mutated": "true"},
            },
        ),
        *[
            profile(f"other-{i:02d}", {"selector": {"matchLabels": {"app": f"other-{i}"}}, "qosClass": "LS"})
            for i in range(19)
        ],
    ]
    not_matching = [
        profile(f"trial-other-{i:02d}", {"selector": {"matchLabels": {"app": f"trial-{i}"}}, "qosClass": "LS"}, WARN)
        for i in range(20)
    ]
    matching = [
        profile(
            f"trial-{i}",
            {
                "selector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                "koordinatorPriority": 1000 + i,
                "labels": {f"trial-{i}": "yes"},
            },
            WARN,
        )
        for i in range(3)
    ]
    scenarios = [
        ("20 enforced profiles, no warn-only", base),
        ("+ 20 warn-only profiles, none matching", [*base, *not_matching]),
        ("+ 1 warn-only profile matching", [*base, *not_matching, *matching[:1]]),
        ("+ 3 warn-only profiles matching", [*base, *not_matching, *matching]),
    ]
    print(
        f"warn-only profiles on the hot path: serve_review on /mutate-pod, best of {ROUNDS} rounds of "
        f"{requests:,} requests, one core"
    )
    states = [snapshot(objects) for _, objects in scenarios]
    best = [float("inf")] * len(scenarios)
    warnings = [0] * len(scenarios)
    for _ in range(ROUNDS):  # interleaved, so that a noisy neighbour slows every scenario alike
        for index, state in enumerate(states):
            for _ in range(100):  # warm up
                serve_review(route, body, state)
            started = time.perf_counter()
            for _ in range(requests):
                served = serve_review(route, body, state)
            best[index] = min(best[index], time.perf_counter() - started)
            warnings[index] = len(served.outcome.warnings) if served.outcome else 0
    for index, (label, _) in enumerate(scenarios):
        rate = requests / best[index]
        print(
            f"  {label:42s} {rate:8,.0f} req/s  {best[index] / requests * 1e6:6.0f} µs/req  "
            f"({rate * best[0] / requests:5.1%} of the first; {warnings[index]} warning(s))"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--profiles", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=5_000)
    args = parser.parse_args()
    hot_path_benchmark(args.requests)
    print()
    audit_benchmark(args.pods, args.profiles)
    return 0


if __name__ == "__main__":
    sys.exit(main())

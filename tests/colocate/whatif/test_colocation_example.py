"""The two-class example: a latency-sensitive web tier peaking at noon and Spark executors arriving
every hour. Colocation raises the nodes' cpu utilisation; the koordlet's suppression keeps the web
tier's nodes under their threshold, and without it they go over."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policies.apis.quantity import scalar_of

from .conftest import EXAMPLE

Run = Callable[..., dict[str, Any]]


def test_enabling_the_colocation_profile_raises_average_cpu_utilisation(example_run: Run) -> None:
    off = example_run("--profiles", str(EXAMPLE / "no-profiles"))
    on = example_run("--profiles", str(EXAMPLE / "profiles"))
    assert on["summary"]["cpuUtilisation"]["mean"] > off["summary"]["cpuUtilisation"]["mean"] + 0.05
    batch_used = sum(scalar_of("cpu", n["used"]["batch"]["cpu"]) for s in on["steps"] for n in s["nodes"])
    assert batch_used > 0
    assert all(n["used"]["batch"]["cpu"] == "0" for s in off["steps"] for n in s["nodes"])


def test_the_koordlet_suppresses_be_so_the_ls_pods_stay_within_their_threshold(example_run: Run) -> None:
    on = example_run("--profiles", str(EXAMPLE / "profiles"))
    assert on["summary"]["lsOverThresholdNodeMinutes"] == 0
    noon = next(s for s in on["steps"] if s["t"] == "2026-01-01T12:00:00Z")
    for node in noon["nodes"]:
        used = sum(scalar_of("cpu", node["used"][c]["cpu"]) for c in ("prod", "batch", "free"))
        assert node["suppressedMilliCPU"] > 0
        # 65 % of 16 cores, with half a core of system usage on top of the pods
        assert used + 500 <= 16000 * 65 // 100
        # the executors want a core each: the koordlet held them below that
        running_batch = scalar_of("cpu", node["requested"]["batch"]["cpu"]) // 1000
        assert scalar_of("cpu", node["used"]["batch"]["cpu"]) < 1000 * running_batch


def test_with_the_koordlets_suppression_off_the_ls_nodes_go_over_their_threshold(example_run: Run) -> None:
    off = example_run("--profiles", str(EXAMPLE / "profiles"), "--koordlet-feature-gates", "BECPUSuppress=false")
    assert off["summary"]["lsOverThresholdNodeMinutes"] > 0
    noon = next(s for s in off["steps"] if s["t"] == "2026-01-01T12:00:00Z")
    assert all(n["lsOverThreshold"] for n in noon["nodes"])
    assert all(n["suppressedMilliCPU"] == 0 for n in noon["nodes"])


def test_a_comparison_holds_both_runs_and_the_utilisation_gained(example_run: Run) -> None:
    both = example_run("--profiles", str(EXAMPLE / "no-profiles"), "--compare-profiles", str(EXAMPLE / "profiles"))
    assert set(both) == {"a", "b"}
    assert both["b"]["summary"]["gainedOverA"]["cpu"] > 0.05
    assert both["a"]["summary"]["admitted"] == both["b"]["summary"]["admitted"] == 8 * 13

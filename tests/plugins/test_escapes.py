"""A plugin cannot stop or stall its component (issue 41, item 7): before, a plugin raising
SystemExit or KeyboardInterrupt ended `serve`, `koordlet run` or `simulate`, and an admission plugin
that blocked stalled every admission of its server process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from colocate.testing.builders import make_metric, make_node, make_node_slo, make_pod
from colocate.testing.commands import admit, descheduler_config, descheduler_dry_run, koordlet_plan, simulate
from tests.plugins.test_failures import (
    ADMISSION,
    DESCHEDULE_PLUGINS,
    DESCHEDULER,
    KOORDLET,
    SCHEDULER,
    STRATEGY,
    WEBHOOK,
    enabled,
    one_node_cluster,
    score_plugin,
)
from tests.support.admission import admission_review
from tests.support.distributions import Site
from tests.support.served import Served

ESCAPES = ["SystemExit(3)", "KeyboardInterrupt()"]


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_scheduler_plugin_that_exits_makes_its_status_error(site: Site, tmp_path: Path, escape: str) -> None:
    site.install(
        "acme-exits",
        {SCHEDULER: {"Exits": "acme_exits:SPEC"}},
        {"acme_exits": score_plugin("Exits", f"raise {escape}")},
    )
    result = simulate(tmp_path, [*one_node_cluster(), make_pod("web")], enabled("Exits"))
    assert result.exit_code == 0, result.stderr
    [placement] = result.json()["placements"]
    assert placement["code"] == "Error" and placement["message"].startswith(
        f"Exits: plugin Exits raised in score: {escape[:-3]}"
    )


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_strategy_that_exits_is_skipped_for_the_round(site: Site, tmp_path: Path, escape: str) -> None:
    text = STRATEGY.replace('raise RuntimeError("cgroup went away")', f"raise {escape}")
    site.install("acme-exits", {KOORDLET: {"Flaky": "acme_exits:ENTRY"}}, {"acme_exits": text})
    objects = [
        make_node("node-1", cpu="8", memory="16Gi", capacity={"cpu": "8", "memory": "16Gi"}),
        make_node_slo("node-1"),
        make_metric("node-1"),
    ]
    result = koordlet_plan(tmp_path, objects, qos_extension_plugins="Flaky=true")
    assert result.exit_code == 0, result.stderr
    assert result.json()["strategies"]["Flaky"]["error"].startswith(escape.split("(")[0])
    assert result.json()["strategies"]["CPUSuppress"]["enabled"] is True


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_descheduler_plugin_that_exits_is_skipped(site: Site, tmp_path: Path, escape: str) -> None:
    text = DESCHEDULE_PLUGINS.replace('raise ZeroDivisionError("division by zero")', f"raise {escape}")
    site.install(
        "acme-exits",
        {DESCHEDULER: {"Flaky": "acme_exits:FLAKY", "EvictAll": "acme_exits:EVICT_ALL"}},
        {"acme_exits": text},
    )
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "8"}}
    nodes = [dict(make_node(n), status=ready) for n in ("a", "b")]
    config = descheduler_config({"deschedule": {"enabled": [{"name": "Flaky"}, {"name": "EvictAll"}]}})
    result = descheduler_dry_run(tmp_path, [*nodes, make_pod("web", node="a", owner_kind="ReplicaSet")], config)
    assert result.exit_code == 0, result.stderr
    [round_] = result.json()["rounds"]
    assert round_["failedPlugins"][0].startswith(f"profile test: plugin Flaky raised {escape.split('(')[0]}")
    assert [e["pod"] for e in round_["evictions"]] == ["default/web"]


@pytest.mark.parametrize("escape", ESCAPES)
def test_an_admission_plugin_that_exits_denies_on_a_fail_route_and_is_skipped_on_an_ignore_one(
    site: Site, tmp_path: Path, escape: str
) -> None:
    text = ADMISSION.replace('raise ValueError("bad state")', f"raise {escape}")
    site.install("acme-exits", {WEBHOOK: {"Flaky": "acme_exits:SPEC"}}, {"acme_exits": text})
    denied = admit(tmp_path / "pod", make_pod("web"), admission_plugins=["Flaky"])
    assert denied.exit_code == 1 and "internal error in plugin Flaky" in denied.stderr
    node = make_node("node-1", cpu="8", memory="16Gi")
    skipped = admit(tmp_path / "node", node, admission_plugins=["Flaky"], operation="CREATE")
    assert skipped.exit_code == 0, skipped.stderr
    assert "flaky" not in (skipped.json()["metadata"].get("labels") or {})


SLOW_AND_EXITING = """
import sys
import time

from colocate.api.webhook import CREATE, AdmissionPluginSpec


class Slow:
    name = "Slow"
    operations = frozenset({CREATE})
    reads = frozenset()

    def mutate(self, obj, ctx):
        if obj["metadata"]["name"].startswith("exit"):
            sys.exit(1)
        if obj["metadata"]["name"].startswith("slow"):
            time.sleep(20)


SPEC = AdmissionPluginSpec("Slow", ("/mutate-pod", "/mutate-node-status"), Slow)
"""


def test_serve_outlives_a_plugin_that_exits_and_answers_past_one_that_blocks(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.install("acme-slow", {WEBHOOK: {"Slow": "acme_slow:SPEC"}}, {"acme_slow": SLOW_AND_EXITING})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(site.paths))
    server = Served(tmp_path, "--admission-plugins", "Slow").wait_ready()
    try:
        exited = server.review("/mutate-pod", admission_review(make_pod("exit-1")))
        assert not exited["allowed"] and exited["status"]["code"] == 500
        started = time.monotonic()
        blocked = server.review("/mutate-pod", admission_review(make_pod("slow-1")), timeout=10)
        assert time.monotonic() - started < 5, "answered within the route's timeout (3 s), not after 20 s"
        assert (
            not blocked["allowed"] and "did not answer within 2.5s (failurePolicy Fail" in blocked["status"]["message"]
        )
        # the event loop was never blocked: a route without the plugin answers while it sleeps
        assert server.review("/validate-pod", admission_review(make_pod("other")))["allowed"]
        assert server.review("/mutate-pod", admission_review(make_pod("fast")))["allowed"]
        node = make_node("slow-node", cpu="8", memory="16Gi")
        review = admission_review(node, operation="CREATE", resource="nodes", sub_resource="status", kind="Node")
        ignored = server.review("/mutate-node-status", review, timeout=15)
        assert ignored["allowed"] and "patch" not in ignored, "Ignore route: admitted unchanged"
        assert server.process.poll() is None
    finally:
        server.kill()

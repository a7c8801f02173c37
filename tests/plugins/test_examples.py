"""Each surface loads an installed out-of-tree plugin (the packages under examples/plugins/) and
runs it in a real command; `colocate plugins list` names each with its distribution."""

from __future__ import annotations

from pathlib import Path

from colocate.testing.builders import make_metric, make_node, make_node_slo, make_pod
from colocate.testing.commands import (
    admit,
    descheduler_config,
    descheduler_dry_run,
    koordlet_plan,
    run_colocate,
    scheduler_config,
    simulate,
)
from tests.support.distributions import Site

TRAFFIC = "example.colocate.io/network-receive-bytes"


def test_plugins_list_names_every_installed_example_with_its_distribution(site: Site) -> None:
    installed = {
        site.install_example("scheduler-networktraffic"): ("scheduler", "NodeNetworkTraffic", ["score"]),
        site.install_example("koordlet-becpuidle"): ("koordlet", "BECPUIdle", None),
        site.install_example("descheduler-podlifetime"): ("descheduler", "PodLifeTime", ["deschedule"]),
        site.install_example("webhook-trafficclass"): ("webhook", "TrafficClass", None),
    }
    result = run_colocate("plugins", "list", "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    rows = result.json()
    by_source = {row["source"]: row for row in rows if row["source"] != "in-tree"}
    assert set(by_source) == set(installed)
    for distribution, (surface, name, points) in installed.items():
        row = by_source[distribution]
        assert (row["surface"], row["name"]) == (surface, name)
        if points is not None:
            assert row["extensionPoints"] == points
    assert by_source["colocate-example-trafficclass"]["routes"] == ["/mutate-pod"]
    assert {row["surface"] for row in rows if row["source"] == "in-tree"} == {
        "scheduler",
        "koordlet",
        "descheduler",
        "webhook",
    }
    table = run_colocate("plugins", "list")
    assert "colocate-example-podlifetime" in table.stdout and table.stdout.splitlines()[0].split() == [
        "SURFACE",
        "NAME",
        "SOURCE",
        "POINTS",
    ]


def test_scheduler_simulate_enables_an_installed_plugin_from_the_profile(site: Site, tmp_path: Path) -> None:
    site.install_example("scheduler-networktraffic")
    nodes = [
        make_node("busy", cpu="8", memory="16Gi", annotations={TRAFFIC: "900"}),
        make_node("idle", cpu="8", memory="16Gi", annotations={TRAFFIC: "10"}),
    ]
    score = {"score": {"enabled": [{"name": "NodeNetworkTraffic", "weight": 50}]}}
    result = simulate(tmp_path, [*nodes, make_pod("web", requests={"cpu": "1"})], scheduler_config(score))
    assert result.exit_code == 0, result.stderr
    assert result.json()["placements"][0]["node"] == "idle"
    bad = simulate(tmp_path / "bad", nodes, scheduler_config(score, {"NodeNetworkTraffic": {"annotation": ""}}))
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "error: profiles[0].pluginConfig[0].args.annotation: must not be empty"


def test_koordlet_plan_runs_an_installed_strategy_behind_its_gate(site: Site, tmp_path: Path) -> None:
    site.install_example("koordlet-becpuidle")
    objects = [
        make_node("node-1", cpu="8", memory="16Gi", capacity={"cpu": "8", "memory": "16Gi"}),
        make_node_slo("node-1"),
        make_metric("node-1"),
        make_pod("batch", qos="BE", node="node-1", uid=True),  # the agent refuses pods without a UUID
    ]
    result = koordlet_plan(tmp_path, objects, qos_extension_plugins="BECPUIdle=true")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["strategies"]["BECPUIdle"] == {"enabled": True, "idlePods": 1}
    assert [(a["file"], a["value"]) for a in report["actions"] if a["strategy"] == "BECPUIdle"] == [("cpu.idle", "1")]
    off = koordlet_plan(tmp_path / "off", objects)
    assert "BECPUIdle" not in off.json()["strategies"]
    unknown = koordlet_plan(tmp_path / "unknown", objects, qos_extension_plugins="BECPUIdel=true")
    assert unknown.exit_code == 2 and "unrecognized feature gate: BECPUIdel" in unknown.stderr


def test_descheduler_dry_run_runs_an_installed_plugin_from_the_profile(site: Site, tmp_path: Path) -> None:
    site.install_example("descheduler-podlifetime")
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "8"}}
    nodes = [dict(make_node(n), status=ready) for n in ("a", "b")]
    pods = [
        make_pod("old", node="a", created="2024-04-01T00:00:00Z", owner_kind="ReplicaSet"),
        make_pod("young", node="b", created="2024-05-01T10:00:00Z", owner_kind="ReplicaSet"),
    ]
    config = descheduler_config(
        {"deschedule": {"enabled": [{"name": "PodLifeTime"}]}}, {"PodLifeTime": {"maxPodLifeTimeSeconds": 3600}}
    )
    result = descheduler_dry_run(tmp_path, [*nodes, *pods], config)
    assert result.exit_code == 0, result.stderr
    [round_] = result.json()["rounds"]
    assert [(e["pod"], e["plugin"]) for e in round_["evictions"]] == [("default/old", "PodLifeTime")]


def test_apply_runs_an_installed_admission_plugin_after_the_in_tree_ones(site: Site, tmp_path: Path) -> None:
    site.install_example("webhook-trafficclass")
    pod = make_pod("batch", qos="BE", priority_class="koord-batch")
    result = admit(tmp_path, pod, admission_plugins=["TrafficClass"])
    assert result.exit_code == 0, result.stderr
    assert result.json()["metadata"]["labels"]["example.colocate.io/traffic-class"] == "bulk"
    without = admit(tmp_path / "without", pod)
    assert "example.colocate.io/traffic-class" not in without.json()["metadata"]["labels"]
    unknown = admit(tmp_path / "unknown", pod, admission_plugins=["TraficClass"])
    assert unknown.exit_code == 2
    assert unknown.stderr.startswith("error: --admission-plugins: no installed admission plugin named 'TraficClass'")

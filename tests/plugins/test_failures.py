"""Failure is clear and contained: name clashes, packages that fail to import, plugins that raise.

Each case installs a distribution made for it (tests.support.distributions) and runs the command a
user would run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from colocate.testing.builders import make_metric, make_node, make_node_slo, make_pod
from colocate.testing.commands import (
    admit,
    descheduler_config,
    descheduler_dry_run,
    explain,
    koordlet_plan,
    run_colocate,
    scheduler_config,
    simulate,
)
from tests.support.distributions import Site

SCHEDULER = "colocate.scheduler.plugins"
KOORDLET = "colocate.koordlet.strategies"
DESCHEDULER = "colocate.descheduler.plugins"
WEBHOOK = "colocate.webhook.plugins"

SCORE_PLUGIN = """
from colocate.api.scheduler import SUCCESS, PluginSpec


class {name}:
    name = "{name}"

    def score(self, state, pod, node):
        {body}
        return 1, SUCCESS


SPEC = PluginSpec("{name}", lambda args, handle: {name}())
"""

BROKEN = "import a_module_nobody_installed\n"


def score_plugin(name: str, body: str = "pass") -> str:
    return SCORE_PLUGIN.format(name=name, body=body)


def one_node_cluster() -> list[dict]:
    return [make_node("node-1", cpu="8", memory="16Gi"), make_node("node-2", cpu="8", memory="16Gi")]


def enabled(name: str) -> dict:
    return scheduler_config({"score": {"enabled": [{"name": name}]}})


# --- clashes -----------------------------------------------------------------------------------


def test_a_name_an_in_tree_plugin_has_is_an_error_naming_both(site: Site, tmp_path: Path) -> None:
    site.install("acme-sort", {SCHEDULER: {"PrioritySort": "acme_sort:SPEC"}}, {"acme_sort": score_plugin("X")})
    result = simulate(tmp_path, one_node_cluster())
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: scheduler plugin PrioritySort (acme_sort:SPEC) from distribution acme-sort clashes with "
        "the in-tree scheduler plugin PrioritySort"
    ]


def test_a_name_two_distributions_give_is_an_error_naming_both(site: Site, tmp_path: Path) -> None:
    site.install("acme-one", {DESCHEDULER: {"Tidy": "acme_one:SPEC"}}, {"acme_one": "SPEC = None\n"})
    site.install("acme-two", {DESCHEDULER: {"Tidy": "acme_two:SPEC"}}, {"acme_two": "SPEC = None\n"})
    result = descheduler_dry_run(tmp_path, one_node_cluster(), descheduler_config({}))
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "descheduler plugin Tidy is provided by two distributions" in line
    assert "acme-one (acme_one:SPEC)" in line and "acme-two (acme_two:SPEC)" in line
    listed = run_colocate("plugins", "list", "-o", "json")
    assert listed.exit_code == 2 and "two distributions" in listed.stderr
    assert "LowNodeLoad" in {row["name"] for row in listed.json() if row["surface"] == "descheduler"}


# --- a package whose import fails ----------------------------------------------------------------


def test_a_broken_package_not_enabled_changes_nothing_and_is_listed_with_its_distribution(
    site: Site, tmp_path: Path
) -> None:
    site.install("acme-broken", {SCHEDULER: {"Broken": "acme_broken:SPEC"}}, {"acme_broken": BROKEN})
    result = simulate(tmp_path, [*one_node_cluster(), make_pod("web")])
    assert result.exit_code == 0 and result.stderr == ""
    assert result.json()["summary"]["scheduled"] == 1
    listed = run_colocate("plugins", "list", "-o", "json")
    assert listed.exit_code == 0
    assert listed.stderr.splitlines() == [
        "warning: scheduler plugin Broken (acme_broken:SPEC) from distribution acme-broken failed to import: "
        "ModuleNotFoundError: No module named 'a_module_nobody_installed'"
    ]
    [row] = [r for r in listed.json() if r["source"] == "acme-broken"]
    assert row["name"] == "Broken" and "failed to import" in row["error"]


BROKEN_LINE = (
    "from distribution acme-broken failed to import: ModuleNotFoundError: No module named 'a_module_nobody_installed'"
)


def test_a_broken_scheduler_plugin_enabled_in_a_profile_exits_2_with_its_line(site: Site, tmp_path: Path) -> None:
    site.install("acme-broken", {SCHEDULER: {"Broken": "acme_broken:SPEC"}}, {"acme_broken": BROKEN})
    result = simulate(tmp_path, one_node_cluster(), enabled("Broken"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: scheduler plugin Broken (acme_broken:SPEC) {BROKEN_LINE}"]


def test_a_broken_strategy_enabled_by_its_gate_exits_2_with_its_line(site: Site, tmp_path: Path) -> None:
    site.install("acme-broken", {KOORDLET: {"Broken": "acme_broken:ENTRY"}}, {"acme_broken": BROKEN})
    objects = [make_node("node-1", cpu="8", memory="16Gi"), make_node_slo("node-1"), make_metric("node-1")]
    assert koordlet_plan(tmp_path, objects).exit_code == 0
    result = koordlet_plan(tmp_path / "on", objects, qos_extension_plugins="Broken=true")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: koordlet plugin Broken (acme_broken:ENTRY) {BROKEN_LINE}"]


def test_a_broken_descheduler_plugin_enabled_in_a_profile_exits_2_with_its_line(site: Site, tmp_path: Path) -> None:
    site.install("acme-broken", {DESCHEDULER: {"Broken": "acme_broken:SPEC"}}, {"acme_broken": BROKEN})
    config = descheduler_config({"deschedule": {"enabled": [{"name": "Broken"}]}})
    result = descheduler_dry_run(tmp_path, one_node_cluster(), config)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: descheduler plugin Broken (acme_broken:SPEC) {BROKEN_LINE}"]


def test_a_broken_admission_plugin_enabled_exits_2_with_its_line(site: Site, tmp_path: Path) -> None:
    site.install("acme-broken", {WEBHOOK: {"Broken": "acme_broken:SPEC"}}, {"acme_broken": BROKEN})
    assert admit(tmp_path, make_pod("web")).exit_code == 0
    result = admit(tmp_path / "on", make_pod("web"), admission_plugins=["Broken"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: webhook plugin Broken (acme_broken:SPEC) {BROKEN_LINE}"]


def test_an_entry_point_naming_the_wrong_kind_of_object_is_one_line(site: Site, tmp_path: Path) -> None:
    site.install("acme-odd", {SCHEDULER: {"Odd": "acme_odd:SPEC"}}, {"acme_odd": "SPEC = 42\n"})
    result = simulate(tmp_path, one_node_cluster(), enabled("Odd"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: scheduler plugin Odd (acme_odd:SPEC) from distribution acme-odd is a int, not a PluginSpec "
        "(group colocate.scheduler.plugins names PluginSpec objects)"
    ]


# --- a plugin that raises while running --------------------------------------------------------


def test_a_scheduler_plugin_that_raises_makes_its_status_error(site: Site, tmp_path: Path) -> None:
    site.install(
        "acme-flaky",
        {SCHEDULER: {"Flaky": "acme_flaky:SPEC"}},
        {"acme_flaky": score_plugin("Flaky", "raise KeyError('gone')")},
    )
    cluster = [*one_node_cluster(), make_pod("web"), make_pod("api")]
    result = simulate(tmp_path, cluster, enabled("Flaky"))
    assert result.exit_code == 0, result.stderr
    for placement in result.json()["placements"]:
        assert placement["node"] is None and placement["code"] == "Error"
        assert placement["message"] == "Flaky: plugin Flaky raised in score: KeyError: 'gone'"
    report = explain(tmp_path / "explain", one_node_cluster(), make_pod("web"), enabled("Flaky"))
    assert report.exit_code == 1
    assert report.json()["error"] == "score Flaky: Error: plugin Flaky raised in score: KeyError: 'gone'"


STRATEGY = """
from colocate.api.koordlet import StrategyResult, strategy_entry


class Flaky:
    name = "Flaky"
    interval = 1.0

    def __init__(self, options):
        pass

    def enabled(self):
        return True

    def setup(self, ctx):
        pass

    def round(self, inp):
        raise RuntimeError("cgroup went away")


ENTRY = strategy_entry("Flaky", Flaky)
"""


def test_a_strategy_that_raises_is_skipped_for_the_round_and_the_others_run(site: Site, tmp_path: Path) -> None:
    site.install("acme-flaky", {KOORDLET: {"Flaky": "acme_flaky:ENTRY"}}, {"acme_flaky": STRATEGY})
    objects = [
        make_node("node-1", cpu="8", memory="16Gi", capacity={"cpu": "8", "memory": "16Gi"}),
        make_node_slo("node-1"),
        make_metric("node-1"),
        make_pod("batch", qos="BE", node="node-1"),
    ]
    result = koordlet_plan(tmp_path, objects, qos_extension_plugins="Flaky=true")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["strategies"]["Flaky"] == {"enabled": True, "error": "RuntimeError: cgroup went away"}
    assert report["strategies"]["CPUSuppress"]["enabled"] is True
    assert [a for a in report["actions"] if a["strategy"] == "CPUSuppress"]


def test_the_agent_counts_the_rounds_a_strategy_skipped(site: Site, tmp_path: Path) -> None:
    from colocate.cluster.store import ClusterStore
    from policies.apis.kinds import NODE_METRIC_KIND
    from scheduler_plugins.koordlet.agent import Agent, AgentSettings
    from scheduler_plugins.koordlet.features import koordlet_gates
    from scheduler_plugins.koordlet.framework import plugin_strategies
    from scheduler_plugins.koordlet.states import KOORDLET_KINDS
    from scheduler_plugins.koordlet.strategies.base import StrategyOptions

    site.install("acme-flaky", {KOORDLET: {"Flaky": "acme_flaky:ENTRY"}}, {"acme_flaky": STRATEGY})
    (tmp_path / "cg" / "cpu").mkdir(parents=True)
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace("Node", [make_node("node-1", cpu="8", memory="16Gi")])
    settings = AgentSettings("node-1", tmp_path / "cg", plugin_strategies=tuple(plugin_strategies({"Flaky": True})))
    agent = Agent(settings, StrategyOptions(koordlet_gates("")), store, processors=())
    agent.last_reports = {}
    for _ in range(2):
        report = agent.compute(["Flaky", "CPUSuppress"])
        assert report.failed == ["Flaky"] and report.strategies["CPUSuppress"]["enabled"] is True
    assert agent.registry.get_sample_value("koordlet_strategy_failures_total", {"strategy": "Flaky"}) == 2.0


DESCHEDULE_PLUGINS = """
from colocate.api.descheduler import SUCCESS, EvictOptions, PluginSpec, no_args


class Flaky:
    name = "Flaky"

    def __init__(self, args, handle):
        pass

    def deschedule(self, nodes):
        raise ZeroDivisionError("division by zero")


class EvictAll:
    name = "EvictAll"

    def __init__(self, args, handle):
        self.handle = handle

    def deschedule(self, nodes):
        for node in nodes:
            for pod in self.handle.snapshot.pods_on(node["metadata"]["name"]):
                if self.handle.evictor.filter(pod):
                    self.handle.evictor.evict(pod, EvictOptions("EvictAll", "all"))
        return SUCCESS


class BadFilter:
    name = "BadFilter"

    def __init__(self, args, handle):
        pass

    def filter(self, pod):
        raise LookupError("no owner cache")

    def pre_eviction_filter(self, pod):
        return True


FLAKY = PluginSpec("Flaky", Flaky)
EVICT_ALL = PluginSpec("EvictAll", EvictAll)
BAD_FILTER = PluginSpec("BadFilter", BadFilter)
"""


def test_a_descheduler_plugin_that_raises_is_skipped_and_the_next_one_runs(site: Site, tmp_path: Path) -> None:
    site.install(
        "acme-flaky",
        {DESCHEDULER: {"Flaky": "acme_flaky:FLAKY", "EvictAll": "acme_flaky:EVICT_ALL"}},
        {"acme_flaky": DESCHEDULE_PLUGINS},
    )
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "8"}}
    nodes = [dict(make_node(n), status=ready) for n in ("a", "b")]
    pod = make_pod("web", node="a", owner_kind="ReplicaSet")
    config = descheduler_config({"deschedule": {"enabled": [{"name": "Flaky"}, {"name": "EvictAll"}]}})
    result = descheduler_dry_run(tmp_path, [*nodes, pod], config)
    assert result.exit_code == 0, result.stderr
    [round_] = result.json()["rounds"]
    assert round_["failedPlugins"] == ["profile test: plugin Flaky raised ZeroDivisionError: division by zero; skipped"]
    assert [e["pod"] for e in round_["evictions"]] == ["default/web"]
    config_path = str(tmp_path / "descheduler-config.yaml")
    table = run_colocate(
        "descheduler", "run", "--cluster", str(tmp_path / "cluster"), "--config", config_path,
        "--dry-run", "--rounds", "1", "--now", "2024-05-01T10:01:00Z", "-o", "table",
    )  # fmt: skip
    assert "  plugin failed: profile test: plugin Flaky raised ZeroDivisionError: division by zero; skipped" in (
        table.stdout.splitlines()
    )


ADMISSION = """
from colocate.api.webhook import CREATE, UPDATE, AdmissionPluginSpec


class Flaky:
    name = "Flaky"
    operations = frozenset({CREATE, UPDATE})
    reads = frozenset()
    explains_itself = False

    def mutate(self, obj, ctx):
        obj.setdefault("metadata", {}).setdefault("labels", {})["flaky"] = "half-done"
        raise ValueError("bad state")


SPEC = AdmissionPluginSpec("Flaky", ("/mutate-pod", "/mutate-node-status"), Flaky)
"""


def test_an_admission_plugin_that_raises_on_a_fail_route_denies_the_request(site: Site, tmp_path: Path) -> None:
    site.install("acme-flaky", {WEBHOOK: {"Flaky": "acme_flaky:SPEC"}}, {"acme_flaky": ADMISSION})
    result = admit(tmp_path, make_pod("web"), admission_plugins=["Flaky"])
    assert result.exit_code == 1
    assert "internal error in plugin Flaky: ValueError('bad state')" in result.stderr


def test_an_admission_plugin_that_raises_on_an_ignore_route_is_skipped_its_changes_dropped(
    site: Site, tmp_path: Path
) -> None:
    site.install("acme-flaky", {WEBHOOK: {"Flaky": "acme_flaky:SPEC"}}, {"acme_flaky": ADMISSION})
    node = make_node("node-1", cpu="8", memory="16Gi")
    result = admit(tmp_path, node, admission_plugins=["Flaky"], operation="CREATE")
    assert result.exit_code == 0, result.stderr
    assert "plugin Flaky failed on /mutate-node-status (failurePolicy Ignore: skipped)" in result.stderr
    assert "flaky" not in (result.json()["metadata"].get("labels") or {})


@pytest.mark.parametrize("path", ["/mutate-nothing"])
def test_an_admission_plugin_joining_an_unknown_route_is_one_line(site: Site, tmp_path: Path, path: str) -> None:
    text = ADMISSION.replace('("/mutate-pod", "/mutate-node-status")', f'("{path}",)')
    site.install("acme-lost", {WEBHOOK: {"Flaky": "acme_lost:SPEC"}}, {"acme_lost": text})
    result = admit(tmp_path, make_pod("web"), admission_plugins=["Flaky"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: --admission-plugins: admission plugin Flaky joins {path}, which is no route"
    ]


FILTER_PLUGIN = """
from colocate.api.scheduler import SUCCESS, PluginSpec


class Flaky:
    name = "Flaky"

    def filter(self, state, pod, node):
        raise OSError("disk gone")


SPEC = PluginSpec("Flaky", lambda args, handle: Flaky())
"""


def test_the_extender_answers_a_raising_plugin_with_its_error(site: Site) -> None:
    from colocate.testing.scheduler import framework
    from scheduler_plugins.scheduler.extender.service import ExtenderService

    site.install("acme-flaky", {SCHEDULER: {"Flaky": "acme_flaky:SPEC"}}, {"acme_flaky": FILTER_PLUGIN})
    fwk, cluster = framework(one_node_cluster(), scheduler_config({"filter": {"enabled": [{"name": "Flaky"}]}}))
    answer = ExtenderService(fwk, cluster).filter({"Pod": make_pod("web"), "NodeNames": ["node-1", "node-2"]})
    assert answer["Error"] == "Flaky: plugin Flaky raised in filter: OSError: disk gone"
    assert answer["NodeNames"] is None


def test_a_filter_plugin_that_raises_keeps_the_pod_and_is_reported(site: Site, tmp_path: Path) -> None:
    site.install(
        "acme-flaky",
        {DESCHEDULER: {"EvictAll": "acme_flaky:EVICT_ALL", "BadFilter": "acme_flaky:BAD_FILTER"}},
        {"acme_flaky": DESCHEDULE_PLUGINS},
    )
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "8"}}
    nodes = [dict(make_node(n), status=ready) for n in ("a", "b")]
    pods = [make_pod(name, node="a", owner_kind="ReplicaSet") for name in ("web", "api")]
    config = descheduler_config(
        {"deschedule": {"enabled": [{"name": "EvictAll"}]}, "filter": {"enabled": [{"name": "BadFilter"}]}}
    )
    result = descheduler_dry_run(tmp_path, [*nodes, *pods], config)
    assert result.exit_code == 0, result.stderr
    [round_] = result.json()["rounds"]
    assert round_["evictions"] == []
    assert round_["failedPlugins"] == [
        "plugin BadFilter raised LookupError: no owner cache; the pods it was asked about stay"
    ]


def test_a_plugin_whose_constructor_raises_is_one_line_naming_its_distribution(site: Site, tmp_path: Path) -> None:
    text = score_plugin("Fragile").replace("lambda args, handle: Fragile()", "lambda args, handle: 1 / 0")
    site.install("acme-fragile", {SCHEDULER: {"Fragile": "acme_fragile:SPEC"}}, {"acme_fragile": text})
    result = simulate(tmp_path, one_node_cluster(), enabled("Fragile"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: scheduler plugin Fragile from distribution acme-fragile failed to start: "
        "ZeroDivisionError('division by zero')"
    ]


def test_the_configuration_can_join_a_plugin_to_some_of_its_routes(site: Site, tmp_path: Path) -> None:
    site.install("acme-flaky", {WEBHOOK: {"Flaky": "acme_flaky:SPEC"}}, {"acme_flaky": ADMISSION})
    pod = admit(tmp_path, make_pod("web"), admission_plugins=["Flaky:/mutate-node-status"])
    assert pod.exit_code == 0, pod.stderr  # not on /mutate-pod: the pod never meets it
    node = admit(tmp_path / "node", make_node("node-1"), admission_plugins=["Flaky:/mutate-node-status"])
    assert "plugin Flaky failed on /mutate-node-status" in node.stderr
    undeclared = admit(tmp_path / "bad", make_pod("web"), admission_plugins=["Flaky:/validate-pod"])
    assert undeclared.exit_code == 2
    assert undeclared.stderr.splitlines() == [
        "error: --admission-plugins: admission plugin Flaky declares the routes /mutate-pod, /mutate-node-status, "
        "not /validate-pod"
    ]

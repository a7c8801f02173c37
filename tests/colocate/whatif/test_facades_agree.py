"""Each component's command and `colocate whatif` run the same round: given the same objects and
time, `koordlet plan`, `scheduler simulate`, `descheduler run` and `manager run` report what
whatif's koordlet, scheduler, descheduler and manager do (both go through the component's round
façade: `koordlet.node_round`, `scheduler.runner`, `descheduler.runner`, `manager.service`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.cluster.files import DirectorySource
from colocate.cluster.store import ClusterStore
from colocate.main import main
from colocate.whatif.components import Koordlet, Manager, SimClock, descheduler_over, scheduler_over
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.runner import installed_registry as descheduler_registry
from scheduler_plugins.descheduler.runner import parse_config as parse_descheduler_config
from scheduler_plugins.scheduler.runner import KIND as SCHEDULER_KIND
from scheduler_plugins.scheduler.runner import installed_registry as scheduler_registry
from scheduler_plugins.scheduler.runner import parse_config as parse_scheduler_config
from tests.support.paths import REPO

NOW = "2024-05-01T10:01:00Z"
KOORDLET_NODE = REPO / "manifests" / "koordlet" / "example-node"
SCHEDULER_CLUSTER = REPO / "manifests" / "scheduler" / "example-cluster"
DESCHEDULER_CLUSTER = REPO / "manifests" / "descheduler" / "example-cluster"
DESCHEDULER_CONFIG = REPO / "manifests" / "descheduler" / "example-config.yaml"
MANAGER_CLUSTER = REPO / "manifests" / "manager" / "example-cluster"


def at(text: str = NOW) -> float:
    when = parse_time(text)
    assert when is not None
    return when


def loaded(directory: Path) -> ClusterStore:
    store = ClusterStore()
    DirectorySource(directory, store, log_problems=False).scan()
    assert not store.problems
    return store


def command(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_koordlet_plan_and_whatifs_node_round_agree(capsys: pytest.CaptureFixture[str]) -> None:
    planned = command(capsys, "koordlet", "plan", "--node-dir", str(KOORDLET_NODE), "--now", NOW, "-o", "json")
    store = loaded(KOORDLET_NODE)
    [node] = store.objects("Node")
    koordlet = Koordlet(None, SimClock(at()))
    report = koordlet.round(node, tuple(store.objects("Pod")), store, None)
    writes = [w.as_dict(koordlet.layout) for w in report.writes]
    assert writes and writes == planned["actions"][: len(writes)]  # plan's host writes follow: whatif has no host
    assert [e.as_dict() for e in report.evictions] == planned["evictions"]
    cgroup_only = {name: s for name, s in report.strategies.items() if "unavailable" not in s}
    assert "CPUSuppress" in cgroup_only
    assert cgroup_only == {name: planned["strategies"][name] for name in cgroup_only}


def test_scheduler_simulate_and_whatifs_scheduler_pass_agree(capsys: pytest.CaptureFixture[str]) -> None:
    simulated = command(
        capsys, "scheduler", "simulate", "--cluster", str(SCHEDULER_CLUSTER), "--now", NOW, "-o", "json"
    )
    config = parse_scheduler_config({}, scheduler_registry(), SCHEDULER_KIND)
    scheduler = scheduler_over(loaded(SCHEDULER_CLUSTER), config, SimClock(at()))
    passed = scheduler.step()
    placed = [p.as_dict() for p in passed.unqueued + passed.placements]
    assert any(p["node"] for p in placed)
    assert placed == simulated["placements"]


def test_descheduler_run_and_whatifs_descheduler_step_agree(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = yaml.safe_load(DESCHEDULER_CONFIG.read_text())
    document["deschedulingInterval"] = "2m"  # whatif's step runs a round every interval (never at 0)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(document))
    ran = command(
        capsys, "descheduler", "run", "--cluster", str(DESCHEDULER_CLUSTER), "--config", str(config_file),
        "--rounds", "1", "--now", NOW, "-o", "json",
    )  # fmt: skip
    config = parse_descheduler_config(document, descheduler_registry())
    store = loaded(DESCHEDULER_CLUSTER)
    pods = len(store.objects("Pod"))
    round_ = descheduler_over(store, config, SimClock(at())).step(at())
    assert round_ is not None and round_.evictions
    assert [round_.as_dict()] == ran["rounds"]
    assert len(store.objects("Pod")) == pods - len(round_.evictions)  # whatif's evictions leave its store


def test_manager_run_and_whatifs_manager_round_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manager", "run", "--cluster", str(MANAGER_CLUSTER), "--rounds", "1", "--now", NOW]) == 0
    [line] = capsys.readouterr().out.splitlines()
    store = loaded(MANAGER_CLUSTER)
    result = Manager(store, SimClock(at())).round()
    assert result is not None and result.plans
    assert {"nodes": [plan.as_dict() for plan in result.plans]} == json.loads(line)

"""NodeNetworkTraffic through the real commands, with the package installed beside colocate."""

from __future__ import annotations

from pathlib import Path

import pytest
from colocate_example_networktraffic import DEFAULT_ANNOTATION, NAME

from colocate.testing.builders import make_node, make_pod
from colocate.testing.commands import explain, scheduler_config, simulate
from colocate.testing.scheduler import framework, plugin_of

ONLY_THIS_SCORE = {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": NAME}]}}


def node(name: str, received: str | None) -> dict:
    annotations = {DEFAULT_ANNOTATION: received} if received is not None else None
    return make_node(name, cpu="8", memory="16Gi", annotations=annotations)


def test_simulate_places_the_pod_on_the_node_that_received_least(tmp_path: Path) -> None:
    objects = [node("busy", "900"), node("idle", "100"), make_pod("web", requests={"cpu": "1"})]
    result = simulate(tmp_path, objects, scheduler_config(ONLY_THIS_SCORE))
    assert result.exit_code == 0, result.stderr
    [placement] = result.json()["placements"]
    assert placement["node"] == "idle"


def test_explain_shows_raw_bytes_and_the_inverted_score(tmp_path: Path) -> None:
    result = explain(
        tmp_path, [node("busy", "900"), node("quiet", None)], make_pod("web"), scheduler_config(ONLY_THIS_SCORE)
    )
    assert result.exit_code == 0, result.stderr
    scores = {row["name"]: row["scores"][0] for row in result.json()["nodes"]}
    assert scores["busy"]["raw"] == 900 and scores["busy"]["normalized"] == 0
    assert scores["quiet"]["raw"] == 0 and scores["quiet"]["normalized"] == 100


def test_its_args_are_parsed_by_its_own_parser(tmp_path: Path) -> None:
    config = scheduler_config(ONLY_THIS_SCORE, {NAME: {"annotation": "example.com/rx"}})
    fwk, _ = framework([node("n", None)], config)
    assert plugin_of(fwk, NAME).args.annotation == "example.com/rx"
    bad = simulate(tmp_path, [node("n", None)], scheduler_config(ONLY_THIS_SCORE, {NAME: {"annotation": 7}}))
    assert bad.exit_code == 2 and "annotation" in bad.stderr


@pytest.mark.parametrize("value", ["lots", "-5"])
def test_a_garbled_annotation_counts_as_no_traffic(tmp_path: Path, value: str) -> None:
    result = explain(
        tmp_path, [node("odd", value), node("busy", "10")], make_pod("web"), scheduler_config(ONLY_THIS_SCORE)
    )
    assert result.json()["selected"] == "odd"

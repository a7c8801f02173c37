"""PodLifeTime through `colocate descheduler run --dry-run`, installed beside colocate."""

from __future__ import annotations

from pathlib import Path

from colocate.testing.builders import make_node, make_pod
from colocate.testing.commands import descheduler_config, descheduler_dry_run

NOW = "2024-05-01T10:01:00Z"


def cluster() -> list[dict]:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    nodes = [
        dict(make_node(n, cpu="8", memory="16Gi"), status={"allocatable": {"cpu": "8"}, **ready}) for n in ("a", "b")
    ]
    old = make_pod("old", node="a", created="2024-04-01T00:00:00Z", owner_kind="ReplicaSet")
    young = make_pod("young", node="b", created="2024-05-01T10:00:00Z", owner_kind="ReplicaSet")
    return [*nodes, old, young]


def config(max_seconds: int = 3600) -> dict:
    return descheduler_config(
        {"deschedule": {"enabled": [{"name": "PodLifeTime"}]}},
        {"PodLifeTime": {"maxPodLifeTimeSeconds": max_seconds}},
    )


def test_dry_run_would_evict_the_pods_older_than_the_limit(tmp_path: Path) -> None:
    result = descheduler_dry_run(tmp_path, cluster(), config(), NOW)
    assert result.exit_code == 0, result.stderr
    [round_] = result.json()["rounds"]
    assert [(e["pod"], e["plugin"]) for e in round_["evictions"]] == [("default/old", "PodLifeTime")]


def test_a_bad_limit_is_one_line_naming_the_field(tmp_path: Path) -> None:
    result = descheduler_dry_run(tmp_path, cluster(), config(0), NOW)
    assert result.exit_code == 2 and "maxPodLifeTimeSeconds" in result.stderr

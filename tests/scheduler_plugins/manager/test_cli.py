"""`colocate manager plan` over the example cluster of docs/manager.md: the JSON contract, the table,
`--last-sync`, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from tests.support.paths import REPO

EXAMPLE = REPO / "manifests" / "manager" / "example-cluster"
NOW = "2024-05-01T10:01:00Z"


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["manager", "plan", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else out), err


def test_plan_json_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = plan(capsys, "--cluster", str(EXAMPLE), "--now", NOW, "-o", "json")
    assert code == 0 and err == ""
    node1, node2, node3 = doc["nodes"]
    assert list(node1) == [
        "name",
        "allocatable",
        "zones",
        "update",
        "reason",
        "colocationStrategy",
        "nodeSLO",
        "nodeMetric",
    ]
    # 32 cores - 40 % (12.8) - system 1 - the web server's 2 = 16.2; the batch job does not count
    assert node1["allocatable"] == {
        "kubernetes.io/batch-cpu": "16200",
        "kubernetes.io/batch-memory": "82892868813",  # 128Gi - 35 % - 2Gi - 4Gi, in bytes
        "kubernetes.io/mid-cpu": "0",
        "kubernetes.io/mid-memory": "0",
    }
    assert node1["zones"] == {
        zone: {"kubernetes.io/batch-cpu": "8100", "kubernetes.io/batch-memory": "41446434407"}
        for zone in ("node-0", "node-1")
    }
    assert node1["update"] is True and node1["reason"].startswith("first write")
    assert node1["colocationStrategy"]["cpuReclaimThresholdPercent"] == 60
    assert node1["nodeSLO"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] == 65
    assert node1["nodeMetric"]["metricCollectPolicy"]["reportIntervalSeconds"] == 60
    # node-2's NodeMetric is an hour old: degraded, its resources are left out (not "0")
    assert node2["allocatable"] == {} and node2["reason"].startswith("degraded: NodeMetric stale")
    assert "zones" not in node2
    # node-3 is switched off by its node config: its hand-written batch resources are removed
    assert node3["allocatable"] == {} and node3["update"] is True
    assert node3["reason"].startswith("disabled: DisableInConfig")
    assert node3["colocationStrategy"]["enable"] is False


def test_last_sync_lets_the_update_rule_decide(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, cluster)
    nodes = yaml.safe_load((cluster / "nodes.yaml").read_text())
    node1 = nodes["items"][0]
    node1["metadata"]["annotations"] = {"node.koordinator.sh/cpu-normalization-ratio": "1.00"}
    written = {
        "kubernetes.io/batch-cpu": "15500",
        "kubernetes.io/batch-memory": "80Gi",
        "kubernetes.io/mid-cpu": "0",
        "kubernetes.io/mid-memory": "0",
    }
    node1["status"]["allocatable"].update(written)
    (cluster / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    code, doc, _ = plan(
        capsys, "--cluster", str(cluster), "--now", NOW, "--last-sync", "2024-05-01T10:00:00Z", "-o", "json"
    )
    assert code == 0
    assert doc["nodes"][0]["update"] is False  # 15.5 -> 16.2 cores is 4.5 %, written 60 s ago
    code, doc, _ = plan(
        capsys, "--cluster", str(cluster), "--now", NOW, "--last-sync", "2024-05-01T09:50:00Z", "-o", "json"
    )
    assert doc["nodes"][0]["update"] is True and doc["nodes"][0]["reason"].startswith("last write 660s ago")


def test_plan_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = plan(capsys, "--cluster", str(EXAMPLE), "--now", NOW)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NODE", "BATCH-CPU", "BATCH-MEMORY", "MID-CPU", "MID-MEMORY", "UPDATE", "REASON"]
    assert lines[1].split()[:6] == ["node-1", "16200", "82892868813", "0", "0", "yes"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cluster", "/nonexistent"], "not a directory"),
        (["--cluster", str(EXAMPLE), "--now", "yesterday"], "--now"),
        (["--cluster", str(EXAMPLE), "--last-sync", "soon"], "--last-sync"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = plan(capsys, *argv)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_a_broken_config_is_reported_and_nothing_planned_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, cluster)
    config = yaml.safe_load((cluster / "config.yaml").read_text())
    config["data"]["colocation-config"] = "{broken"
    (cluster / "config.yaml").write_text(yaml.safe_dump(config))
    code, doc, _ = plan(capsys, "--cluster", str(cluster), "--now", NOW, "-o", "json")
    assert code == 0 and doc["configErrors"][0]["reason"] == "ColocationCfgUnmarshalFailed"
    assert all(not node["update"] for node in doc["nodes"])
    assert doc["nodes"][2]["allocatable"] == {"kubernetes.io/batch-cpu": "10000", "kubernetes.io/batch-memory": "20Gi"}


def test_run_over_a_directory_writes_in_memory(capsys: pytest.CaptureFixture[str]) -> None:
    """`manager run --cluster DIR --rounds 2`: the first round writes (in memory), the second finds
    nothing to write; the directory is not touched."""
    before = {p: p.read_text() for p in EXAMPLE.iterdir()}
    code = main(["manager", "run", "--cluster", str(EXAMPLE), "--now", NOW, "--rounds", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    first, second = (json.loads(line) for line in out.splitlines())
    assert [n["update"] for n in first["nodes"]] == [True, True, True]
    assert [n["update"] for n in second["nodes"]] == [False, False, False]
    assert second["nodes"][0]["allocatable"]["kubernetes.io/batch-cpu"] == "16200"
    assert {p: p.read_text() for p in EXAMPLE.iterdir()} == before


def test_run_flags_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["manager", "run", "--cluster", str(EXAMPLE), "--resync-period", "soon"])
    assert code == 2 and "--resync-period" in capsys.readouterr().err


def test_a_malformed_node_does_not_stop_the_others(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, cluster)
    (cluster / "odd.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "odd"},
                "status": {"capacity": "lots", "allocatable": {}},
            }
        )
    )
    code, doc, err = plan(capsys, "--cluster", str(cluster), "--now", NOW, "-o", "json")
    assert code == 0 and doc["failedNodes"] == ["odd"] and "odd" in err
    assert [n["name"] for n in doc["nodes"]] == ["node-1", "node-2", "node-3"]


def test_plan_without_now_names_the_now_that_replays_the_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = plan(capsys, "--cluster", str(EXAMPLE))
    assert code == 0
    degraded, replay = err.splitlines()
    assert degraded.startswith("warning: 2 of 3 nodes are degraded at ")
    assert degraded.endswith(": their NodeMetrics are older than degradeTimeMinutes")
    assert replay == "warning: replaying a snapshot? pass --now 2024-05-01T10:00:00Z (its newest NodeMetric)"
    # with that --now, node-1 is planned; node-2's NodeMetric is really an hour old, and --now says no more
    code, doc, err = plan(capsys, "--cluster", str(EXAMPLE), "--now", "2024-05-01T10:00:00Z", "-o", "json")
    assert code == 0 and err == "" and doc["nodes"][0]["allocatable"]


@pytest.mark.parametrize("depth", [255, 1000, 100_000])
@pytest.mark.parametrize("key", ["colocation-config", "resource-threshold-config"])
def test_a_config_nested_too_deep_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, depth: int, key: str
) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, cluster)
    config = yaml.safe_load((cluster / "config.yaml").read_text())
    config["data"][key] = "[" * depth + "]" * depth
    (cluster / "config.yaml").write_text(yaml.safe_dump(config))
    code, out, err = plan(capsys, "--cluster", str(cluster), "--now", NOW)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"data.{key}: nested more than 254 levels deep" in err

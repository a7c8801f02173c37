"""`colocate descheduler run` over a directory: the JSON a user reads, rounds, dry run, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from tests.support.paths import REPO

EXAMPLE = REPO / "manifests" / "descheduler" / "example-cluster"
CONFIG = REPO / "manifests" / "descheduler" / "example-config.yaml"
NOW = "2024-05-01T10:01:00Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["descheduler", "run", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else out), err


def test_dry_run_json_reports_every_node_and_what_would_be_evicted(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(
        capsys, "--cluster", str(EXAMPLE), "--config", str(CONFIG), "--dry-run", "--now", NOW, "-o", "json"
    )
    assert code == 0 and doc["dryRun"] is True
    [round_] = doc["rounds"]
    assert round_["round"] == 1
    assert [(n["name"], n["pool"], n["classification"]) for n in round_["nodes"]] == [
        ("node-a", "__default_node_pool__", "high"),
        ("node-b", "__default_node_pool__", "high"),
        ("node-c", "__default_node_pool__", "bothLow"),
        ("node-d", "__default_node_pool__", "bothLow"),
    ]
    assert round_["nodes"][0]["usage"] == {"cpu": 85.0, "memory": 31.64}
    assert round_["nodes"][0]["thresholds"] == {"low": {"cpu": 30, "memory": 40}, "high": {"cpu": 60, "memory": 70}}
    assert [(e["pod"], e["node"], e["plugin"]) for e in round_["evictions"]] == [
        ("default/batch-1", "node-a", "LowNodeLoad"),
        ("default/web-4", "node-a", "LowNodeLoad"),
        ("default/web-8", "node-b", "LowNodeLoad"),
    ]
    assert round_["evictions"][0]["reason"] == "node is overutilized, node cpu usage(85.00%)>threshold(60.00%)"


def test_rounds_run_back_to_back_and_evictions_leave_the_in_memory_state(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(
        capsys, "--cluster", str(EXAMPLE), "--config", str(CONFIG), "--rounds", "2", "--now", NOW, "-o", "json"
    )
    assert code == 0 and [r["round"] for r in doc["rounds"]] == [1, 2]
    first = {e["pod"] for e in doc["rounds"][0]["evictions"]}
    second = {e["pod"] for e in doc["rounds"][1]["evictions"]}
    assert first and not first & second  # an evicted pod is gone from the state


def test_zero_rounds_means_one_round_as_the_help_says(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(
        capsys, "--cluster", str(EXAMPLE), "--config", str(CONFIG), "--rounds", "0", "--now", NOW, "-o", "json"
    )
    assert (code, err) == (0, "")
    assert [r["round"] for r in doc["rounds"]] == [1]


def test_the_table_says_what_would_be_evicted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--cluster", str(EXAMPLE), "--config", str(CONFIG), "--dry-run", "--now", NOW)
    assert code == 0
    assert "round 1 (dry run)" in out and "would evict:" in out and "default/batch-1" in out


def test_expired_metrics_classify_nothing_and_evict_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(
        capsys, "--cluster", str(EXAMPLE), "--config", str(CONFIG), "--now", "2024-05-02T00:00:00Z", "-o", "json"
    )
    assert code == 0 and doc["rounds"][0]["evictions"] == []
    assert {n["classification"] for n in doc["rounds"][0]["nodes"]} == {"none"}


def config_with(tmp_path: Path, change: dict[str, Any]) -> Path:
    raw = yaml.safe_load(CONFIG.read_text())
    raw["profiles"][0]["pluginConfig"][0]["args"].update(change)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--config", "nope.yaml"], "error: --config: nope.yaml"),
        (["--rounds", "-1"], "error: --rounds: must be 0 (once) or more"),
        (["--now", "yesterday"], "error: --now: not an RFC 3339 time"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    args = ["--cluster", str(EXAMPLE), "--config", str(CONFIG), *argv]
    code, _, err = run(capsys, *args)
    assert code == 2 and err.startswith(message) and err.count("\n") == 1


def test_a_bad_threshold_names_its_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(
        capsys, "--cluster", str(EXAMPLE), "--config", str(config_with(tmp_path, {"highThresholds": {"cpu": 160}}))
    )
    assert code == 2
    assert err.startswith("error: profiles[0].pluginConfig[0].args.highThresholds.cpu: Invalid value: 160")


def test_a_broken_cluster_file_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "state")
    (tmp_path / "state" / "broken.yaml").write_text("kind: [")
    code, _, err = run(capsys, "--cluster", str(tmp_path / "state"), "--config", str(CONFIG))
    assert code == 2 and "broken.yaml" in err


def test_the_worked_example_in_the_docs_is_what_the_command_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    from tests.docs.markdown import split

    _, blocks = split((REPO / "docs" / "descheduler.md").read_text(encoding="utf-8"))
    (block,) = [b for b in blocks if b.info == "console" and b.lines[0].startswith("$ colocate descheduler run")]
    monkeypatch.chdir(REPO)
    assert main(shlex.split(block.lines[0])[2:]) == 0
    assert capsys.readouterr().out.splitlines() == list(block.lines[1:])


def test_offline_evictions_honour_the_disruption_budgets_in_the_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "state")
    (tmp_path / "state" / "pdb.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"minAvailable": 8, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    )  # 9 healthy: one may go
    code, doc, _ = run(
        capsys, "--cluster", str(tmp_path / "state"), "--config", str(CONFIG), "--now", NOW, "-o", "json"
    )
    assert code == 0
    [round_] = doc["rounds"]
    assert [e["pod"] for e in round_["evictions"]] == ["default/batch-1", "default/web-4"]
    assert [(s["pod"], s["reason"]) for s in round_["skipped"]] == [
        (
            "default/web-8",
            "blocked by a PodDisruptionBudget: Cannot evict pod as it would violate the pod's disruption budget.",
        )
    ]


def test_without_a_cluster_to_read_it_says_how_to_give_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run(capsys, "--config", str(CONFIG))
    assert code == 2 and err.startswith("error: no cluster to read") and "--kubeconfig FILE" in err
    code, _, err = run(capsys, "--kubeconfig", "/nonexistent", "--config", str(CONFIG))
    assert code == 2 and err == "error: --kubeconfig /nonexistent: no such file\n"

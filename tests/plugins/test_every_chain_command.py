"""`test`, `audit` and `whatif` judge with the chain `serve` runs: the same `--admission-plugins`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from colocate.testing.builders import make_pod
from colocate.testing.commands import run_colocate, write_objects
from tests.support.distributions import Site
from tests.support.paths import REPO

WEBHOOK = "colocate.webhook.plugins"
EXAMPLE = REPO / "examples" / "whatif"

TEAM_LABEL = """
from colocate.api.webhook import CREATE, UPDATE, AdmissionPluginSpec, Denied


class TeamLabel:
    name = "TeamLabel"
    operations = frozenset({CREATE, UPDATE})
    reads = frozenset()
    explains_itself = False

    def mutate(self, obj, ctx):
        if obj["metadata"]["name"].startswith("refuse"):
            raise Denied("TeamLabel refuses this pod", 403)
        obj["metadata"].setdefault("labels", {})["team"] = "platform"


SPEC = AdmissionPluginSpec("TeamLabel", ("/mutate-pod",), TeamLabel)
"""

REFUSE_ALL = TEAM_LABEL.replace('obj["metadata"]["name"].startswith("refuse")', "True")


def install(site: Site, text: str = TEAM_LABEL) -> None:
    site.install("acme-team", {WEBHOOK: {"TeamLabel": "acme_team:SPEC"}}, {"acme_team": text})


def test_colocate_test_runs_the_enabled_plugins(site: Site, tmp_path: Path) -> None:
    install(site)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pods.yaml").write_text(yaml.safe_dump(make_pod("web", namespace="default")))
    (suite / "colocate-test.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "colocate.io/v1alpha1",
                "kind": "Test",
                "resources": ["pods.yaml"],
                "results": [{"resource": "web", "patchedResource": "expected.yaml"}],
            }
        )
    )
    applied = run_colocate("apply", "--cluster", str(write_objects(tmp_path / "empty", [])), "-f",
                           str(suite / "pods.yaml"), "--admission-plugins", "TeamLabel")  # fmt: skip
    labelled = json.loads(applied.stdout)
    (suite / "expected.yaml").write_text(yaml.safe_dump(labelled))
    assert labelled["metadata"]["labels"]["team"] == "platform"
    without = run_colocate("test", str(tmp_path / "suite"))
    assert without.exit_code == 1 and '{"team":"platform"} -> (none)' in without.stdout
    enabled = run_colocate("test", str(tmp_path / "suite"), "--admission-plugins", "TeamLabel")
    assert enabled.exit_code == 0, enabled.stdout + enabled.stderr


def test_audit_runs_the_enabled_plugins(site: Site, tmp_path: Path) -> None:
    install(site, REFUSE_ALL)
    cluster = tmp_path / "cluster"
    shutil.copytree(REPO / "manifests" / "cluster", cluster)
    running = yaml.safe_load(
        (REPO / "manifests" / "samples" / "tests" / "expected" / "spark-executor-1.yaml").read_text()
    )
    running["spec"]["nodeName"], running["status"] = "node-1", {"phase": "Running"}
    (cluster / "running.yaml").write_text(yaml.safe_dump(running))
    plain = run_colocate("audit", "--cluster", str(cluster))
    assert plain.exit_code == 0 and "TeamLabel" not in plain.stdout, plain.stdout + plain.stderr
    refused = run_colocate("audit", "--cluster", str(cluster), "-o", "json", "--admission-plugins", "TeamLabel")
    summary = json.loads(refused.stdout)["summary"]
    assert refused.exit_code == 1 and sum(counts["error"] for counts in summary.values()) == 1


def test_whatif_runs_the_enabled_plugins(site: Site, tmp_path: Path) -> None:
    install(site, REFUSE_ALL)
    argv = ["whatif", "--cluster", str(EXAMPLE / "cluster"), "--workload", str(EXAMPLE / "workload.yaml")]
    argv += ["--duration", "30m", "-o", "json"]
    plain = json.loads(run_colocate(*argv).stdout)["summary"]
    refused = run_colocate(*argv, "--admission-plugins", "TeamLabel")
    assert refused.exit_code == 0, refused.stderr
    summary = json.loads(refused.stdout)["summary"]
    assert plain["denied"] == 0 and summary["admitted"] == 0 and summary["denied"] == plain["admitted"] > 0


def test_an_unknown_plugin_is_one_line_for_every_command(site: Site, tmp_path: Path) -> None:
    for argv in (
        ["test", str(REPO / "manifests" / "samples" / "tests")],
        ["audit", "--cluster", str(tmp_path)],
        ["whatif", "--cluster", str(EXAMPLE / "cluster"), "--workload", str(EXAMPLE / "workload.yaml")],
    ):
        result = run_colocate(*argv, "--admission-plugins", "Nobody")
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, argv
        assert result.stderr.startswith("error: --admission-plugins: "), result.stderr

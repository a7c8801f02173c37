"""The audit: exactly the pods that drifted from the current profiles, per profile, with the difference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from colocate.main import main
from tests.support.admission import make_snapshot
from tests.support.builders import make_pod, make_profile
from tests.support.rollout import BATCH, NAMESPACES, REGISTRY, WEB, admitted, batch_pod, cluster, web_pod
from tests.support.strategies import WRITTEN_KEYS, pods, profiles, snapshot_of
from webhook.chain import request_for, run_chain
from webhook.rollout.audit import audit, audit_pod


def test_pods_admitted_by_the_current_profiles_pass() -> None:
    before = cluster([BATCH, WEB], [])
    running = [admitted(batch_pod("b1"), before), admitted(web_pod("w1"), before)]
    report = audit(cluster([BATCH, WEB], running))
    assert (report.audited, len(report.pods), report.drifted()) == (2, 2, [])
    assert {name: dict(c) for name, c in report.counts().items()} == {"batch": {"pass": 1}, "web": {"pass": 1}}


def test_after_a_profile_change_exactly_the_pods_it_matches_drift() -> None:
    before = cluster([BATCH, WEB], [])
    running = [
        admitted(batch_pod("b1"), before),
        admitted(batch_pod("b2", "default"), before),
        admitted(web_pod("w1"), before),
    ]
    changed = make_profile(
        "web",
        selector={"matchLabels": {"tier": "web"}},
        qosClass="LSR",
        priorityClassName="koord-prod",
        labels={"owner": "shop"},
    )
    report = audit(cluster([BATCH, changed], running))
    [drifted] = report.drifted()
    assert (drifted.namespace, drifted.name) == ("default", "w1")
    [result] = drifted.results
    assert result.profile == "web" and result.result == "fail"
    assert [str(c) for c in result.changes] == [
        'metadata.labels[koordinator.sh/qosClass]: "LS" -> "LSR"',
        'metadata.labels.owner: (none) -> "shop"',
    ]


def test_a_pod_created_before_its_profile_drifts_with_the_resource_rewrite_charged_to_the_profile() -> None:
    plain = {**batch_pod("b1"), "status": {"phase": "Running"}}
    report = audit(cluster([BATCH], [plain]))
    [result] = report.drifted()[0].results
    paths = [c.path for c in result.changes]
    assert result.result == "fail"
    assert "metadata.labels[koordinator.sh/qosClass]" in paths and "spec.priorityClassName" in paths
    assert "spec.containers[0].resources.requests[kubernetes.io/batch-cpu]" in paths


def test_overlapping_profiles_charge_each_difference_to_the_last_writer() -> None:
    first = make_profile("a-first", selector={"matchLabels": {"tier": "batch"}}, labels={"team": "one", "x": "1"})
    second = make_profile("b-second", selector={"matchLabels": {"tier": "batch"}}, labels={"team": "two"})
    pod = {
        **make_pod("p", "default", labels={"tier": "batch", "team": "old", "x": "1"}),
        "status": {"phase": "Running"},
    }
    snapshot = cluster([first, second], [pod])
    profiles_by_name = {p.name: p for p in snapshot.profiles}
    result = audit_pod(pod, snapshot, REGISTRY, profiles_by_name)
    assert result is not None
    assert [(r.profile, r.result, [c.path for c in r.changes]) for r in result.results] == [
        ("a-first", "pass", []),
        ("b-second", "fail", ["metadata.labels.team"]),
    ]


def test_probabilistic_profiles_skip_and_terminated_pods_are_left_out() -> None:
    sometimes = make_profile(
        "sometimes", selector={"matchLabels": {"tier": "batch"}}, labels={"team": "data"}, probability="50%"
    )
    running = {**batch_pod("b1"), "status": {"phase": "Running"}}
    done = {**batch_pod("b2"), "status": {"phase": "Succeeded"}}
    report = audit(cluster([sometimes], [running, done]))
    assert report.audited == 1 and report.drifted() == []
    [pod] = report.pods
    assert pod.results[0].result == "skip" and "applies to 50% of pods" in pod.results[0].message


def test_a_profile_naming_a_missing_priority_class_is_an_error() -> None:
    broken = make_profile("broken", selector={"matchLabels": {"tier": "batch"}}, priorityClassName="koord-gold")
    report = audit(make_snapshot(broken, *NAMESPACES, {**batch_pod("b1"), "status": {"phase": "Running"}}))
    [result] = report.pods[0].results
    assert result.result == "error" and 'priorityclasses.scheduling.k8s.io "koord-gold" not found' in result.message


@st.composite
def suffixed_profiles(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Profiles that write no label a selector reads (a second pass would match more profiles, in
    Koordinator too), some with labelSuffixes, which the audit must not append twice."""
    profile_list = draw(profiles(idempotent=True))
    for profile in profile_list:
        if draw(st.booleans()):
            profile["spec"]["labelSuffixes"] = {draw(st.sampled_from(WRITTEN_KEYS)): "-sfx"}
    return profile_list


@given(pods(), suffixed_profiles())
def test_a_pod_admitted_by_the_current_profiles_never_shows_up(
    pod: dict[str, Any], profile_list: list[dict[str, Any]]
) -> None:
    snapshot = snapshot_of(profile_list)
    result = run_chain(request_for(pod, REGISTRY), REGISTRY, snapshot, rand_int=lambda n: 0)
    if not result.allowed:
        return
    running = {**result.object, "status": {"phase": "Running"}}
    profiles_by_name = {p.name: p for p in snapshot.profiles}
    audited = audit_pod(running, snapshot, REGISTRY, profiles_by_name)
    assert audited is None or not audited.drifted, [r for r in audited.results if r.result != "pass"]


def write_cluster(root: Path, objects: list[dict[str, Any]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    return root


def test_the_command_prints_a_table_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.support.builders import KOORD_PRIORITY_CLASSES

    before = cluster([BATCH, WEB], [])
    running = [admitted(batch_pod("b1"), before), {**web_pod("w1"), "status": {"phase": "Running"}}]
    root = write_cluster(tmp_path / "state", [*KOORD_PRIORITY_CLASSES, BATCH, WEB, *NAMESPACES, *running])
    assert main(["audit", "--cluster", str(root)]) == 1  # w1 drifted from an enforced profile
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAMESPACE", "POD", "PROFILE", "RESULT", "DIFFERENCE"]
    assert out[1].split()[:4] == ["default", "w1", "web", "FAIL"]
    assert out[-1] == (
        "1 of 2 running pod(s) differ from what the current 2 profile(s) would make of them (2 matched by a profile)"
    )
    assert main(["audit", "--cluster", str(root), "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["audited"], report["drifted"]) == (2, 1)
    assert report["summary"]["web"] == {"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    [row] = report["results"]
    assert {"path": "metadata.labels[koordinator.sh/qosClass]", "expected": "LS"} in row["differences"]


async def test_the_command_lists_the_cluster_through_a_kubeconfig(
    capsys: pytest.CaptureFixture[str], api: Any, kubeconfig: Path
) -> None:
    import asyncio

    from tests.support.builders import KOORD_PRIORITY_CLASSES

    before = cluster([BATCH, WEB], [])
    for obj in [
        *KOORD_PRIORITY_CLASSES,
        BATCH,
        WEB,
        *NAMESPACES,
        admitted(batch_pod("b1"), before),
        {**web_pod("w1"), "status": {"phase": "Running"}},
    ]:
        api.apply(obj)
    code = await asyncio.to_thread(main, ["audit", "--kubeconfig", str(kubeconfig), "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and (report["audited"], report["drifted"]) == (2, 1)
    assert [(r["pod"], r["profile"], r["result"]) for r in report["results"]] == [("w1", "web", "fail")]


def test_audit_metrics_drop_a_deleted_profiles_series_to_zero() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from webhook.rollout.background import AuditMetrics

    registry = CollectorRegistry()
    metrics = AuditMetrics(registry)
    plain = {**batch_pod("b1"), "status": {"phase": "Running"}}
    metrics.record(audit(cluster([BATCH, WEB], [plain])), 1000.0)
    metrics.record(audit(cluster([WEB], [plain])), 2000.0)
    text = generate_latest(registry).decode()
    assert 'colocate_audit_pods{profile="batch",result="fail"} 0.0' in text
    assert "colocate_audit_drifted_pods 0.0" in text and "colocate_audit_last_run_timestamp_seconds 2000.0" in text
    assert 'colocate_audit_runs_total{result="ok"} 2.0' in text


def test_the_documented_sample_audit_finds_the_documented_pods(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """docs/rollout.md: the example cluster, its running pods and the warn-only trial profile."""
    import shutil

    from tests.support.paths import REPO

    state = tmp_path / "state"
    shutil.copytree(REPO / "manifests" / "cluster", state)
    shutil.copy(REPO / "manifests" / "samples" / "audit" / "running-pods.yaml", state)
    shutil.copy(REPO / "manifests" / "samples" / "tests" / "warn-only-profile.yaml", state)
    assert main(["audit", "--cluster", str(state), "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(r["pod"], r["profile"], r["result"]) for r in report["results"]] == [
        ("spark-executor-0", "colocation-profile-example", "fail"),
        ("checkout-1", "checkout-priority-trial", "warn"),
    ]


def test_no_drift_is_exit_0_and_a_warn_only_finding_does_not_fail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.support.builders import KOORD_PRIORITY_CLASSES

    before = cluster([BATCH, WEB], [])
    running = [admitted(batch_pod("b1"), before), admitted(web_pod("w1"), before)]
    root = write_cluster(tmp_path / "state", [*KOORD_PRIORITY_CLASSES, BATCH, WEB, *NAMESPACES, *running])
    assert main(["audit", "--cluster", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 of 2 running pod(s) differ")
    trial = {
        **WEB,
        "metadata": {**WEB["metadata"], "name": "trial", "annotations": {"colocate.io/enforcement": "warn"}},
    }
    trial["spec"] = {**WEB["spec"], "labels": {"owner": "shop"}}
    write_cluster(root, [*KOORD_PRIORITY_CLASSES, BATCH, WEB, trial, *NAMESPACES, *running])
    assert main(["audit", "--cluster", str(root), "-o", "json"]) == 0
    assert {r["result"] for r in json.loads(capsys.readouterr().out)["results"]} == {"warn"}


def test_policy_report_writes_the_reports_to_a_file_without_a_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.support.builders import KOORD_PRIORITY_CLASSES

    before = cluster([BATCH, WEB], [])
    running = [admitted(batch_pod("b1"), before), {**web_pod("w1"), "status": {"phase": "Running"}}]
    root = write_cluster(tmp_path / "state", [*KOORD_PRIORITY_CLASSES, BATCH, WEB, *NAMESPACES, *running])
    written = tmp_path / "reports.yaml"
    assert main(["audit", "--cluster", str(root), "--policy-report", str(written)]) == 1
    _, err = capsys.readouterr()
    reports = list(yaml.safe_load_all(written.read_text()))
    assert err == f"policy reports: {len(reports)} written to {written}\n"
    assert {r["kind"] for r in reports} == {"PolicyReport"}
    results = [(r["resources"][0]["name"], r["result"]) for report in reports for r in report["results"]]
    assert ("w1", "fail") in results and ("b1", "pass") in results


@pytest.mark.parametrize(
    "argv",
    [
        ["--cluster", "/nonexistent"],
        ["--kubeconfig", "/nonexistent"],
        ["--cluster", ".", "--write-reports"],
        ["--cluster", "manifests/cluster", "--policy-report", "/nonexistent/dir/reports.yaml"],
    ],
)
def test_a_cluster_that_cannot_be_read_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(["audit", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and [line for line in err.splitlines() if line.startswith("error: ")]


def test_an_api_server_that_does_not_answer_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.support.cluster import free_port

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    assert main(["audit", "--kubeconfig", str(kubeconfig)]) == 2
    assert "cannot reach the API server" in capsys.readouterr().err

"""PolicyReports: written per namespace through the API, replaced in place, never duplicated."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.files import read_manifest_file
from colocate.main import main
from policies.apis.kinds import kind_named
from tests.support.admission import make_snapshot
from tests.support.apiserver import ApiServer
from tests.support.builders import KOORD_PRIORITY_CLASSES, make_profile
from tests.support.paths import REPO
from tests.support.rollout import BATCH, NAMESPACES, WEB, admitted, batch_pod, cluster, web_pod
from webhook.rollout.audit import audit
from webhook.rollout.reports import (
    ANNOTATION_OMITTED,
    REPORT_NAME,
    VERBS,
    ReportWriter,
    WriteSummary,
    policy_reports,
)

REPORTS = kind_named("PolicyReport")


def reports_in(api: ApiServer) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["namespace"]: r for r in api.store.list(REPORTS, "")}


def results_of(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(r["resources"][0]["name"], r["policy"], r["result"]) for r in report["results"]]


async def write_round(kubeconfig: Path, objects: list[dict[str, Any]], seconds: int) -> WriteSummary:
    """One audit round over `objects`, its reports written through the API as `serve` does."""
    reports = policy_reports(audit(make_snapshot(*NAMESPACES, *objects)), seconds)
    return await asyncio.to_thread(ReportWriter(api_client(kubeconfig)).write, reports)


async def test_reports_are_written_per_namespace_then_replaced_in_place(api: ApiServer, kubeconfig: Path) -> None:
    before = cluster([BATCH, WEB], [])
    pods = [admitted(batch_pod("b1"), before), admitted(web_pod("w1"), before)]
    first = await write_round(kubeconfig, [BATCH, WEB, *pods], 1000)
    assert (first.created, first.updated) == (["analytics", "default"], [])
    reports = reports_in(api)
    assert results_of(reports["default"]) == [("w1", "web", "pass")]
    assert reports["default"]["summary"] == {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    entry = reports["default"]["results"][0]
    assert entry["resources"] == [{"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "w1"}]
    assert (entry["source"], entry["rule"], entry["timestamp"]) == (
        "colocate",
        "colocation-profile",
        {"seconds": 1000, "nanos": 0},
    )
    uid, version = reports["default"]["metadata"]["uid"], reports["default"]["metadata"]["resourceVersion"]

    changed = make_profile(
        "web", selector={"matchLabels": {"tier": "web"}}, qosClass="LSR", priorityClassName="koord-prod"
    )
    second = await write_round(kubeconfig, [BATCH, changed, *pods], 2000)
    assert (second.created, second.updated, second.unchanged) == ([], ["default"], ["analytics"])
    reports = reports_in(api)
    assert len(api.store.list(REPORTS, "")) == 2
    [fail] = reports["default"]["results"]
    assert (fail["result"], fail["message"]) == (
        "fail",
        'differs: metadata.labels[koordinator.sh/qosClass]: "LS" -> "LSR"',
    )
    assert fail["properties"] == {"fields": "metadata.labels[koordinator.sh/qosClass]"}
    assert reports["default"]["metadata"]["uid"] == uid and reports["default"]["metadata"]["resourceVersion"] != version

    writes = api.writes("PolicyReport")
    third = await write_round(kubeconfig, [BATCH, changed, *pods], 3000)  # only the timestamps differ
    assert third.unchanged == ["analytics", "default"] and api.writes("PolicyReport") == writes

    fourth = await write_round(kubeconfig, [changed, *pods], 4000)  # no profile matches analytics' pod now
    assert fourth.deleted == ["analytics"] and set(reports_in(api)) == {"default"}


def test_a_report_keeps_the_worst_results_and_counts_every_one() -> None:
    pods = [{**batch_pod(f"b{i}"), "status": {"phase": "Running"}} for i in range(5)]
    snapshot = cluster([BATCH], pods[:2] + [admitted(batch_pod(f"b{i}"), cluster([BATCH], [])) for i in range(2, 5)])
    [report] = policy_reports(audit(snapshot), 0, max_results=3)
    assert report["summary"]["fail"] == 2 and report["summary"]["pass"] == 3
    assert [r["result"] for r in report["results"]] == ["fail", "fail", "pass"]
    assert report["metadata"]["annotations"] == {ANNOTATION_OMITTED: "2"}
    assert report["metadata"]["name"] == REPORT_NAME


def test_the_crd_and_the_rbac_cover_what_the_writer_does() -> None:
    [crd] = read_manifest_file(REPO / "manifests" / "crds" / "policyreports.yaml")
    assert (crd["spec"]["group"], crd["spec"]["names"]["plural"], crd["spec"]["scope"]) == (
        REPORTS.group,
        REPORTS.plural,
        "Namespaced",
    )
    assert [v["name"] for v in crd["spec"]["versions"]] == [REPORTS.version]
    [role] = [o for o in read_manifest_file(REPO / "manifests" / "deploy" / "rbac.yaml") if o["kind"] == "ClusterRole"]
    [rule] = [r for r in role["rules"] if REPORTS.group in r["apiGroups"]]
    assert rule["resources"] == [REPORTS.plural] and set(rule["verbs"]) == set(VERBS)
    assert "policyreports.yaml" in (REPO / "manifests" / "crds" / "kustomization.yaml").read_text()


async def test_the_command_writes_reports_through_a_kubeconfig(
    capsys: pytest.CaptureFixture[str], api: ApiServer, kubeconfig: Path
) -> None:
    for obj in [*KOORD_PRIORITY_CLASSES, WEB, *NAMESPACES, {**web_pod("w1"), "status": {"phase": "Running"}}]:
        api.apply(obj)
    argv = ["audit", "--kubeconfig", str(kubeconfig), "--write-reports", "-o", "json"]
    assert await asyncio.to_thread(main, argv) == 1  # w1 drifted
    out, err = capsys.readouterr()
    assert json.loads(out)["drifted"] == 1
    assert "policy reports: 1 created, 0 updated, 0 unchanged, 0 deleted, 0 failed" in err
    assert results_of(reports_in(api)["default"]) == [("w1", "web", "fail")]
    assert main(["audit", "--cluster", str(REPO / "manifests" / "cluster"), "--write-reports"]) == 2

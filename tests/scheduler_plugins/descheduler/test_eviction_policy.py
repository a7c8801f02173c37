"""The MigrationController's `evictionPolicy` against the API-server stand-in, through
`colocate descheduler run --kubeconfig` and the real `kubernetes` client (Koordinator's
`pkg/descheduler/controllers/migration/evictor`: `evictor_native.go`, `evictor_delete.go`,
`evictor_soft.go` with `TestSoftEvictor`, `interpreter.go`'s `koordinator.sh/evict-policy` label),
and the plugin's `dryRun` and `evictQPS`/`evictBurst` (`TestEvict`, `NewInterpreter`'s rate limiter)."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from policies.apis.constants import ANNOTATION_SOFT_EVICTION, LABEL_EVICT_POLICY
from tests.scheduler_plugins.descheduler.test_whole_loop import CONFIG, cluster
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW


def with_migration_args(**args: Any) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    profile = config["profiles"][0]
    profile["pluginConfig"].append({"name": "MigrationController", "args": args})
    return config


async def run(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any]
) -> dict[str, Any]:
    path = tmp_path / "descheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    code = await asyncio.to_thread(
        main,
        ["descheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(path), "--now", NOW, "-o", "json"],
    )
    out = capsys.readouterr().out
    assert code == 0, out
    [report] = json.loads(out)["rounds"]
    return dict(report)


def pod_names(api: ApiServer) -> set[str]:
    return {p["metadata"]["name"] for p in api.store.list(api.by_kind["Pod"], "default")}


async def test_delete_deletes_the_pods_and_no_disruption_budget_is_asked(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    report = await run(
        api,
        kubeconfig,
        tmp_path,
        capsys,
        with_migration_args(evictionPolicy="Delete", defaultDeleteOptions={"gracePeriodSeconds": 5}),
    )
    # with `Eviction` db-1's budget refuses it (test_whole_loop); `Delete` never asks the budget
    assert api.evictions == []
    deleted = [(ns, name) for ns, name, _ in api.pod_deletions]
    assert ("default", "db-1") in deleted
    assert [e["pod"] for e in report["evictions"]] == [f"default/{name}" for _, name in deleted]
    assert all(options.get("gracePeriodSeconds") == 5 for _, _, options in api.pod_deletions)
    assert not {name for _, name in deleted} & pod_names(api)


async def test_soft_eviction_annotates_the_pods_and_evicts_nothing(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    before = pod_names(api)
    report = await run(api, kubeconfig, tmp_path, capsys, with_migration_args(evictionPolicy="SoftEviction"))
    assert api.evictions == [] and api.pod_deletions == [] and pod_names(api) == before
    assert report["evictions"]
    for entry in report["evictions"]:
        pod = api.store.get(api.by_kind["Pod"], "default", entry["pod"].split("/")[1])
        spec = json.loads(pod["metadata"]["annotations"][ANNOTATION_SOFT_EVICTION])
        assert spec["initiator"] == "LowNodeLoad" and spec["reason"] == entry["reason"]
        assert spec["timestamp"] == NOW.replace(".000", "")
    soft = {
        p["metadata"]["name"]
        for p in api.store.list(api.by_kind["Pod"], "default")
        if ANNOTATION_SOFT_EVICTION in (p["metadata"].get("annotations") or {})
    }
    assert soft == {e["pod"].split("/")[1] for e in report["evictions"]}


async def test_a_pods_evict_policy_label_overrides_the_configured_policy(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = cluster()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "web-4":
            obj["metadata"]["labels"][LABEL_EVICT_POLICY] = "Delete"
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "web-3":
            obj["metadata"]["labels"][LABEL_EVICT_POLICY] = "NoSuchPolicy"  # falls back to the configured one
        api.apply(obj)
    await run(api, kubeconfig, tmp_path, capsys, with_migration_args(evictionPolicy="Eviction"))
    assert [(ns, name) for ns, name, _ in api.pod_deletions] == [("default", "web-4")]
    assert ("default", "web-3") in api.evictions and ("default", "web-4") not in api.evictions


async def test_the_plugins_dry_run_evicts_nothing_and_reports_what_it_would(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    report = await run(api, kubeconfig, tmp_path, capsys, with_migration_args(dryRun=True))
    assert api.evictions == [] and api.pod_deletions == []
    assert [e["pod"] for e in report["evictions"]] == ["default/db-1", "default/web-4", "default/web-8"]


async def test_evict_qps_and_burst_hold_evictions_back(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    # the clock stands still (--now): two tokens, then none. As Koordinator's interpreter, an attempt
    # takes its token before the API answers: db-1's refused eviction (its budget) spends one too
    report = await run(api, kubeconfig, tmp_path, capsys, with_migration_args(evictQPS="0.5", evictBurst=2))
    assert api.evictions == [("default", "web-4")]
    skipped = {s["pod"]: s["reason"] for s in report["skipped"]}
    assert "disruption budget" in skipped["default/db-1"]
    assert skipped["default/web-8"] == "rate-limited: TooManyEvictions: evictQPS/evictBurst reached"

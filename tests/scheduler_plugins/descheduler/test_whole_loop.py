"""The whole loop against the API-server stand-in: two hot nodes and two cold ones; the descheduler
evicts through the Eviction API, a PodDisruptionBudget and the per-node limit hold it back, and the
scheduler then places the evicted pods' replacements on the cold nodes."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW, make_metric, make_node, make_pod, pod_metric

WEB_USAGE = "1400m"
CONFIG = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerConfiguration",
    "deschedulingInterval": "0s",
    "maxNoOfPodsToEvictPerNode": 2,
    "profiles": [
        {
            "name": "koord-descheduler",
            "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
            "pluginConfig": [
                {
                    "name": "LowNodeLoad",
                    "args": {
                        "lowThresholds": {"cpu": 30, "memory": 40},
                        "highThresholds": {"cpu": 60, "memory": 70},
                        "anomalyCondition": {"consecutiveAbnormalities": 1},
                    },
                }
            ],
        }
    ],
}


def running(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def web(name: str, node: str, hour: int) -> dict[str, Any]:
    return running(
        make_pod(
            name,
            node=node,
            owner_kind="ReplicaSet",
            labels={"app": "web"},
            requests={"cpu": "1", "memory": "1Gi"},
            created=f"2024-05-01T0{hour}:00:00Z",
        )
    )


def cluster() -> list[dict[str, Any]]:
    hot1 = [web(f"web-{i}", "hot-1", i) for i in range(1, 5)]
    db = running(
        make_pod(
            "db-1", node="hot-1", owner_kind="StatefulSet", labels={"app": "db"}, requests={"cpu": "1", "memory": "1Gi"}
        )
    )
    hot2 = [web(f"web-{i}", "hot-2", i) for i in range(5, 9)]
    usage = {
        "hot-1": [*[(p["metadata"]["name"], WEB_USAGE) for p in hot1], ("db-1", "2000m")],
        "hot-2": [(p["metadata"]["name"], WEB_USAGE) for p in hot2],
        "cold-1": [],
        "cold-2": [],
    }
    metrics = []
    for node, pods in usage.items():
        total = 200 + sum(int(cpu.removesuffix("m")) for _, cpu in pods)
        metrics.append(
            make_metric(
                node,
                cpu=f"{total}m",
                memory="2Gi",
                system={"cpu": "200m"},
                pods=[pod_metric(name, cpu=cpu, memory="512Mi") for name, cpu in pods],
            )
        )
    nodes = [
        make_node("hot-1", cpu="8", memory="32Gi"),
        make_node("hot-2", cpu="8", memory="32Gi"),
        make_node("cold-1", cpu="16", memory="32Gi"),
        make_node("cold-2", cpu="16", memory="32Gi"),
    ]
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    }
    return [*nodes, *hot1, db, *hot2, *metrics, budget]


def replacement(evicted: dict[str, Any]) -> dict[str, Any]:
    """What the ReplicaSet controller creates for an evicted pod: the same template, not bound."""
    pod = copy.deepcopy(evicted)
    pod["metadata"] = {
        "name": f"{evicted['metadata']['name']}-r",
        "namespace": "default",
        "labels": evicted["metadata"]["labels"],
        "ownerReferences": evicted["metadata"]["ownerReferences"],
    }
    pod["spec"].pop("nodeName")
    pod.pop("status")
    return pod


async def test_evict_through_the_api_then_the_scheduler_places_the_replacements_on_cold_nodes(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = cluster()
    for obj in objects:
        api.apply(obj)
    config = tmp_path / "descheduler.yaml"
    config.write_text(yaml.safe_dump(CONFIG))

    code = await asyncio.to_thread(
        main,
        ["descheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(config), "--now", NOW, "-o", "json"],
    )
    out = capsys.readouterr().out
    assert code == 0, out
    [report] = json.loads(out)["rounds"]

    # hot-1 (97.5 % cpu) first: db-1 is its biggest user, but its budget allows no disruption; two web
    # pods go (the newest first), then the per-node limit holds; hot-2 (72.5 %) needs one eviction
    assert api.evictions == [("default", "web-4"), ("default", "web-3"), ("default", "web-8")]
    assert [e["pod"] for e in report["evictions"]] == ["default/web-4", "default/web-3", "default/web-8"]
    skipped = {s["pod"]: s["reason"] for s in report["skipped"]}
    assert "disruption budget" in skipped["default/db-1"]
    assert "maxNoOfPodsToEvictPerNode=2" in skipped["default/web-2"]
    events = api.store.list(api.by_kind["Event"], "default")
    assert sorted(e["involvedObject"]["name"] for e in events) == ["web-3", "web-4", "web-8"]
    assert {e["reason"] for e in events} == {"Descheduled"}
    assert all("LowNodeLoad" in e["message"] for e in events)

    # the ReplicaSet controller's part: a replacement for every evicted pod, pending
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    for _, name in api.evictions:
        api.apply(replacement(by_name[name]))
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for kind in ("Node", "NodeMetric", "Pod"):
        items = api.store.list(api.by_kind[kind])
        (snapshot / f"{kind.lower()}s.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        )
    code = main(["scheduler", "simulate", "--cluster", str(snapshot), "--now", NOW, "-o", "json"])
    placements = json.loads(capsys.readouterr().out)["placements"]
    assert code == 0
    assert sorted(p["pod"] for p in placements) == ["default/web-3-r", "default/web-4-r", "default/web-8-r"]
    assert all(p["node"] in ("cold-1", "cold-2") for p in placements), placements

"""`colocate scheduler quota` as a user runs it: the tree of the example cluster, and bad input."""

import json

from colocate.main import main
from tests.support.builders import make_node, make_pod, make_quota
from tests.support.paths import REPO

EXAMPLE = str(REPO / "manifests" / "scheduler" / "example-cluster")
CONFIG = str(REPO / "manifests" / "scheduler" / "scheduler-config.yaml")


def run(capsys, *argv):
    code = main(["scheduler", "quota", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_every_quota_with_quantities_per_resource(capsys):
    code, out, _ = run(capsys, "--cluster", EXAMPLE, "--config", CONFIG, "-o", "json")
    assert code == 0
    quotas = {q["name"]: q for q in json.loads(out)["quotas"]}
    assert set(quotas) == {
        "koordinator-root-quota",
        "engineering",
        "shop",
        "batch",
        "koordinator-default-quota",
        "koordinator-system-quota",
    }
    shop = quotas["shop"]
    # web-0 (bound), web-1 and db-0 (pending): 12 cpu and 32Gi, above shop's min, all granted
    assert shop == {
        "name": "shop",
        "parent": "engineering",
        "min": {"cpu": "6", "memory": "16Gi"},
        "max": {"cpu": "48", "memory": "192Gi"},
        "request": {"cpu": "12", "memory": "32Gi"},
        "used": {"cpu": "4", "memory": "8Gi"},
        "runtime": {"cpu": "12", "kubernetes.io/batch-cpu": "0", "kubernetes.io/batch-memory": "0", "memory": "32Gi"},
    }
    # 4 nodes x 32 cpu, less the default quota's used (ml/infer-0 has no quota)
    assert quotas["koordinator-root-quota"]["runtime"]["cpu"] == "124"
    assert quotas["batch"]["runtime"]["kubernetes.io/batch-cpu"] == "10k"  # its max


def test_the_table_is_a_tree_with_a_row_per_resource_not_a_wide_table(capsys):
    code, out, _ = run(capsys, "--cluster", EXAMPLE)
    assert code == 0
    lines = out.rstrip("\n").splitlines()
    assert lines[0].split() == ["QUOTA", "RESOURCE", "MIN", "MAX", "REQUEST", "USED", "RUNTIME"]
    assert max(map(len, lines)) <= 120
    labels = [line[: lines[0].index("RESOURCE")].rstrip() for line in lines[1:]]
    quotas = [label for label in labels if any(c.isalpha() for c in label)]
    assert quotas == [
        "koordinator-root-quota",
        "├─ engineering",
        "│  ├─ batch",
        "│  └─ shop",
        "├─ koordinator-default-quota",
        "└─ koordinator-system-quota",
    ]
    shop = lines.index(next(line for line in lines if line.startswith("│  └─ shop")))
    assert lines[shop].split()[3:] == ["cpu", "6", "48", "12", "4", "12"]  # │ └─ shop cpu ...
    assert lines[shop + 3].split() == ["│", "memory", "16Gi", "192Gi", "32Gi", "8Gi", "32Gi"]


def test_pending_pods_count_in_request_and_bound_ones_in_used(capsys, tmp_path):
    objects = [
        make_node("n1", cpu="10", memory="10Gi"),
        make_quota("team-a", min={"cpu": "2"}, max={"cpu": "40"}),
        make_pod("p1", labels={"quota.scheduling.koordinator.sh/name": "team-a"}, requests={"cpu": "8"}, node="n1"),
        make_pod("p2", labels={"quota.scheduling.koordinator.sh/name": "team-a"}, requests={"cpu": "4"}),
        make_pod(
            "done",
            labels={"quota.scheduling.koordinator.sh/name": "team-a"},
            requests={"cpu": "9"},
            node="n1",
            phase="Succeeded",
        ),
    ]
    (tmp_path / "all.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    code, out, _ = run(capsys, "--cluster", str(tmp_path), "-o", "json")
    team = next(q for q in json.loads(out)["quotas"] if q["name"] == "team-a")
    assert code == 0
    assert (team["request"], team["used"], team["runtime"]) == ({"cpu": "12"}, {"cpu": "8"}, {"cpu": "10"})


def test_an_unknown_feature_gate_is_a_usage_error(capsys):
    code, _, err = run(capsys, "--cluster", EXAMPLE, "--feature-gates", "NoSuchGate=true")
    assert code == 2 and "--feature-gates: unrecognized feature gate: NoSuchGate" in err
    code, _, err = run(capsys, "--cluster", EXAMPLE, "--feature-gates", "ElasticQuotaGuaranteeUsage=yes")
    assert code == 2 and 'invalid value of ElasticQuotaGuaranteeUsage=yes, err: strconv.ParseBool: parsing "yes"' in err


def test_simulate_and_explain_take_feature_gates(capsys, tmp_path):
    code = main(
        [
            "scheduler",
            "simulate",
            "--cluster",
            EXAMPLE,
            "--config",
            CONFIG,
            "-o",
            "json",
            "--feature-gates",
            "ElasticQuotaGuaranteeUsage=true",
        ]
    )
    out, _ = capsys.readouterr()
    placements = {p["pod"]: p for p in json.loads(out)["placements"]}
    assert code == 0
    assert "Insufficient quotas, quotaName: batch" in placements["batch/spark-1"]["message"]
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(make_pod("x", "shop", requests={"cpu": "1"})))
    code = main(["scheduler", "explain", "--cluster", EXAMPLE, "--pod", str(pod), "--feature-gates", "Bad"])
    assert code == 2 and "--feature-gates: missing bool value for Bad" in capsys.readouterr().err


def test_the_extender_watches_a_crd_only_when_a_plugin_reads_it():
    from scheduler_plugins.scheduler.cluster.sources import extender_kinds

    always = ["Node", "NodeMetric", "Pod", "Reservation", "PodGroup"]  # Reservations and gangs: main's issue 14
    assert [k.kind for k in extender_kinds(["LoadAwareScheduling"])] == always
    assert [k.kind for k in extender_kinds(["ElasticQuota", "DeviceShare"])][-2:] == ["ElasticQuota", "Device"]


async def test_quota_lists_a_live_cluster_once(api, kubeconfig, capsys):
    import asyncio

    labels = {"quota.scheduling.koordinator.sh/name": "team"}
    api.apply(make_node("n1", cpu="10", memory="10Gi"))
    api.apply(make_quota("team", "work", min={"cpu": "1"}, max={"cpu": "6"}))
    api.apply(make_pod("bound", "work", labels=labels, requests={"cpu": "2"}, node="n1"))
    api.apply(make_pod("pending", "work", labels=labels, requests={"cpu": "5"}))
    api.apply(make_pod("done", "work", labels=labels, requests={"cpu": "3"}, node="n1", phase="Failed"))
    code = await asyncio.to_thread(main, ["scheduler", "quota", "--kubeconfig", str(kubeconfig), "-o", "json"])
    out, _ = capsys.readouterr()
    team = next(q for q in json.loads(out)["quotas"] if q["name"] == "team")
    assert code == 0
    assert (team["request"], team["used"], team["runtime"]) == ({"cpu": "7"}, {"cpu": "2"}, {"cpu": "6"})


def test_quota_against_an_unreachable_server_is_one_message(capsys, tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {}}],
            }
        )
    )
    code, _, err = run(capsys, "--kubeconfig", str(config))
    assert code == 2 and "cannot list the cluster" in err
